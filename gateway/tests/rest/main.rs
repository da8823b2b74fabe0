//! HTTP-level tests of the REST gateway: a real socket, a real HTTP client, and a
//! backend running the real BPMN engine (or, for routing and broker failures, a
//! scripted one).

mod ad_hoc;
mod authentication;
mod bad_input;
mod engine_flows;
mod generated;
mod history_off;
mod late_activations;
mod long_polling;
mod python_client;
mod resources;
mod routing;
mod shapes;
mod spans;
mod support;
mod tags;
mod tls;
mod user_tasks;
mod users;
