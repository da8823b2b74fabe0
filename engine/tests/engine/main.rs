//! Engine tests: commands in, records out (Zeebe's EngineRule style).

mod ad_hoc_compensation;
mod ad_hoc_event_sub_process;
mod ad_hoc_job_worker;
mod ad_hoc_multi_instance;
mod ad_hoc_sub_process;
mod breadth;
mod call_activity;
mod canceling_listeners;
mod commands;
mod compensation;
mod decisions;
mod distribution;
mod elements;
mod events;
mod harness;
mod inclusive;
mod interleavings;
mod listeners;
mod migration;
mod modeler_connectors;
mod modeler_corpus;
mod modeler_runs;
mod modification;
mod multi_instance;
mod operation_reference;
mod random;
mod resource_deletion;
mod samples;
mod signals;
mod start_events;
mod tags;
mod task_listeners;
mod tree_path;
mod user_tasks;
mod zeebe_accepts;

pub use harness::*;
