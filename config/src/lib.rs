//! One typed configuration tree for broker, gateway and exporters, loaded in layers:
//! defaults in code, then a TOML file, then `RILL_…` environment variables (sections
//! separated by `__`), then command-line overrides.

mod bytesize;
mod model;

pub use bytesize::ByteSize;
pub use model::*;
