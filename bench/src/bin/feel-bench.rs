//! FEEL throughput: evaluations per second of typical Modeler expressions against a
//! JSON map of a few variables, plus compile throughput. Run with
//! `cargo run --release -p rill-bench --bin feel-bench [seconds-per-case]`.

use std::hint::black_box;
use std::time::Duration;

use rill_feel::Expression;
use serde_json::{Map, Value};

#[path = "../micro.rs"]
mod micro;
use micro::rate;

const NOW: i64 = 1_796_032_800_000;

/// (label, expression) pairs in the shapes real Camunda models use.
const CASES: &[(&str, &str)] = &[
    ("path", "order.id"),
    ("condition", "order.total > 1000"),
    (
        "and/or",
        "order.total > 100 and customer.vip or retries < 1",
    ),
    ("arithmetic", "order.total * 1.19 - discount"),
    (
        "string concat",
        "\"order-\" + order.id + \"-\" + string(retries)",
    ),
    (
        "if-then-else",
        "if order.total > 1000 then \"manual\" else \"auto\"",
    ),
    ("in range", "retries in [1..5]"),
    ("string fn", "upper case(substring(customer.name, 1, 3))"),
    ("list filter", "order.items[price > 10].sku"),
    (
        "sum for",
        "sum(for i in order.items return i.qty * i.price)",
    ),
    (
        "some satisfies",
        "some i in order.items satisfies i.qty > 3",
    ),
    (
        "context",
        "{id: order.id, total: order.total, vip: customer.vip}",
    ),
    (
        "date-time",
        "date and time(order.placed) + duration(\"P1D\") > now()",
    ),
    ("timer duration", "duration(\"PT30S\")"),
];

fn variables() -> Map<String, Value> {
    let json = r#"{
        "order": {"id": "o-1", "total": 1250.5, "placed": "2026-11-28T09:30:00Z",
                  "items": [{"sku": "a-1", "qty": 2, "price": 10},
                            {"sku": "b-2", "qty": 1, "price": 99.99},
                            {"sku": "c-3", "qty": 5, "price": 1.5}]},
        "customer": {"id": "c-9", "name": "Ada Lovelace", "vip": true},
        "retries": 3,
        "discount": 12.5
    }"#;
    serde_json::from_str(json).expect("the benchmark's variables are valid JSON")
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(0.5);
    let budget = Duration::from_secs_f64(seconds);
    let vars = variables();
    println!(
        "{:<16} {:>12} {:>12} {:>12}  expression",
        "case", "evals/s", "evals/cpu-s", "compiles/s"
    );
    let mut total_wall = 0.0;
    let mut total_cpu = 0.0;
    for (label, source) in CASES {
        let expression = match Expression::compile(source) {
            Ok(expression) => expression,
            Err(error) => {
                eprintln!("{label}: {error}");
                std::process::exit(1);
            }
        };
        if let Err(error) = expression.evaluate(&vars, NOW) {
            eprintln!("{label}: {error}");
            std::process::exit(1);
        }
        let (evals, evals_cpu) = rate(budget, || {
            black_box(expression.evaluate(black_box(&vars), NOW).ok());
        });
        let (compiles, _) = rate(budget, || {
            black_box(Expression::compile(black_box(source)).ok());
        });
        total_wall += evals;
        total_cpu += evals_cpu.unwrap_or(0.0);
        let cpu = evals_cpu.map_or("-".to_owned(), |rate| format!("{rate:.0}"));
        println!("{label:<16} {evals:>12.0} {cpu:>12} {compiles:>12.0}  {source}");
    }
    let cases = CASES.len() as f64;
    println!(
        "mean over {} cases: {:.0} evals/s, {:.0} evals per CPU second",
        CASES.len(),
        total_wall / cases,
        total_cpu / cases
    );
}
