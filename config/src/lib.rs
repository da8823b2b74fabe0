//! One typed configuration tree for broker, gateway and exporters, loaded in layers:
//! defaults in code, then a TOML file, then `RILL_…` environment variables (sections
//! separated by `__`), then command-line overrides. [`RillConfig::validate`] reports every
//! problem at once; [`reference_markdown`] documents every option.

mod bytesize;
mod cron;
mod error;
#[cfg(test)]
mod fixtures;
mod load;
mod model;
mod render;
mod schema;
#[cfg(test)]
mod unread;
mod validate;

pub use bytesize::ByteSize;
pub use cron::CronSchedule;
pub use error::{ConfigError, Problem, Result, SourceProblem};
pub use load::ConfigLoader;
pub use model::*;
pub use render::reference_markdown;
