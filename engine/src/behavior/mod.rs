//! BPMN behaviour run in-line while a command is processed: the element lifecycle, its
//! execution listeners, and what elements hold (jobs, timers, message subscriptions,
//! variables), as methods of
//! [`Processing`](crate::context::Processing).

mod compensations;
mod elements;
mod errors;
mod escalations;
mod jobs;
mod listeners;
mod message_starts;
mod messages;
mod process_events;
mod signals;
mod task_listeners;
mod timers;
mod tree_path;
mod variables;

pub(crate) use elements::{
    PreparedTriggers, ad_hoc_definition, held_catch_event_ids, resolve_ad_hoc_elements,
};
pub(crate) use messages::{MESSAGE_START_VARIABLE, MessageStart};
pub(crate) use task_listeners::check_result as check_task_listener_result;
pub(crate) use variables::{EndingInstance, json_type_name};
