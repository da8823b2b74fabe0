//! DMN throughput: decision-table evaluations per second of a 20-rule, 3-input,
//! 2-output table as Modeler writes it (one per hit policy measured), through
//! `rill_engine::dmn::evaluate_decision`, which also builds the record of inputs and
//! matched rules. Run with
//! `cargo run --release -p rill-bench --bin dmn-bench [seconds-per-case]`.

use std::fmt::Write;
use std::hint::black_box;
use std::time::Duration;

use rill_engine::dmn::{DecisionRequirements, evaluate_decision, parse_dmn};
use rill_feel::Environment;
use serde_json::{Map, Value, json};

#[path = "../micro.rs"]
mod micro;
use micro::rate;

const NOW: i64 = 1_796_032_800_000;
const RULES: usize = 20;

/// A Modeler-shaped DMN 1.3 resource with one table of [`RULES`] rules under
/// `hit_policy`: amount bands, a customer tier, a country list.
fn table(hit_policy: &str, aggregation: Option<&str>) -> String {
    let tiers = ["\"gold\"", "\"silver\"", "\"bronze\"", "-"];
    let countries = [
        "\"DE\", \"AT\", \"CH\"",
        "\"FR\", \"BE\"",
        "not(\"US\")",
        "-",
    ];
    let aggregation = aggregation.map_or(String::new(), |a| format!(" aggregation=\"{a}\""));
    let single_output = aggregation.is_empty();
    let mut xml = String::new();
    let _ = write!(
        xml,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" xmlns:dmndi="https://www.omg.org/spec/DMN/20191111/DMNDI/" xmlns:dc="http://www.omg.org/spec/DMN/20180521/DC/" id="Bench" name="Bench" namespace="http://camunda.org/schema/1.0/dmn">
  <decision id="discount" name="Discount">
    <decisionTable id="Table" hitPolicy="{hit_policy}"{aggregation}>
      <input id="Amount" label="Amount"><inputExpression id="E1" typeRef="number"><text>order.amount</text></inputExpression></input>
      <input id="Tier" label="Tier"><inputExpression id="E2" typeRef="string"><text>customer.tier</text></inputExpression></input>
      <input id="Country" label="Country"><inputExpression id="E3" typeRef="string"><text>customer.country</text></inputExpression></input>
      <output id="Rate" label="Rate" name="rate" typeRef="number" />
"#
    );
    if single_output {
        xml.push_str(
            r#"      <output id="Reason" label="Reason" name="reason" typeRef="string" />
"#,
        );
    }
    for rule in 0..RULES {
        let low = rule * 100;
        let high = low + 99;
        let _ = write!(
            xml,
            r#"      <rule id="Rule_{rule}">
        <inputEntry id="I1_{rule}"><text>[{low}..{high}]</text></inputEntry>
        <inputEntry id="I2_{rule}"><text>{}</text></inputEntry>
        <inputEntry id="I3_{rule}"><text>{}</text></inputEntry>
        <outputEntry id="O1_{rule}"><text>{}</text></outputEntry>
"#,
            tiers[rule % 4],
            countries[rule % 4],
            rule + 1,
        );
        if single_output {
            let _ = writeln!(
                xml,
                r#"        <outputEntry id="O2_{rule}"><text>"band {rule}"</text></outputEntry>"#
            );
        }
        xml.push_str("      </rule>\n");
    }
    xml.push_str(
        r#"    </decisionTable>
  </decision>
  <dmndi:DMNDI><dmndi:DMNDiagram id="D"><dmndi:DMNShape id="S" dmnElementRef="discount"><dc:Bounds height="80" width="180" x="160" y="100" /></dmndi:DMNShape></dmndi:DMNDiagram></dmndi:DMNDI>
</definitions>
"#,
    );
    xml
}

/// Inputs that land on different rules (and on none), so every rule's tests run.
fn inputs() -> Vec<Map<String, Value>> {
    [
        (1_250, "silver", "FR"),
        (310, "bronze", "US"),
        (1_999, "gold", "DE"),
        (5, "gold", "AT"),
        (880, "none", "IT"),
    ]
    .into_iter()
    .map(|(amount, tier, country)| {
        json!({
            "order": {"id": "o-1", "amount": amount, "items": 3},
            "customer": {"id": "c-9", "tier": tier, "country": country, "vip": false},
            "retries": 3
        })
        .as_object()
        .cloned()
        .unwrap_or_default()
    })
    .collect()
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(2.0);
    let budget = Duration::from_secs_f64(seconds);
    let inputs = inputs();
    println!(
        "{:<14} {:>14} {:>16}",
        "hit policy", "evals/s", "evals/cpu-s"
    );
    for (label, policy, aggregation) in [
        ("UNIQUE", "UNIQUE", None),
        ("FIRST", "FIRST", None),
        ("RULE ORDER", "RULE ORDER", None),
        ("COLLECT SUM", "COLLECT", Some("SUM")),
    ] {
        let xml = table(policy, aggregation);
        let drg: DecisionRequirements = match parse_dmn("bench.dmn", xml.as_bytes()) {
            Ok(drg) => drg,
            Err(error) => {
                eprintln!("{label}: {error:?}");
                std::process::exit(1);
            }
        };
        for variables in &inputs {
            if let Err(failure) =
                evaluate_decision(&drg, "discount", variables, Environment::at(NOW))
            {
                eprintln!("{label}: {}", failure.message);
                std::process::exit(1);
            }
        }
        let mut next = 0usize;
        let (wall, cpu) = rate(budget, || {
            let variables = &inputs[next % inputs.len()];
            next += 1;
            black_box(
                evaluate_decision(&drg, "discount", black_box(variables), Environment::at(NOW))
                    .ok(),
            );
        });
        let cpu = cpu.map_or("-".to_owned(), |rate| format!("{rate:.0}"));
        println!("{label:<14} {wall:>14.0} {cpu:>16}");
    }
}
