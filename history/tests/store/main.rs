//! The history store through its public API: records applied in, searches and gets out.

mod definitions;
mod entities;
mod instances;
mod migration;
mod user_tasks;
