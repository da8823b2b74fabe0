//! Decision tables per hit policy, decision requirements graphs and deploy-time
//! problems, on Modeler-shaped models in `tests/fixtures/dmn/`.

use rill_feel::Environment;
use serde_json::{Value as Json, json};

use super::*;

const HIT_POLICIES: &str = include_str!("../../tests/fixtures/dmn/hit-policies.dmn");
const DISH: &str = include_str!("../../tests/fixtures/dmn/dish.dmn");

fn drg(xml: &str) -> DecisionRequirements {
    parse_dmn("test.dmn", xml.as_bytes()).unwrap()
}

fn evaluate(
    drg: &DecisionRequirements,
    decision: &str,
    variables: Json,
) -> Result<DecisionEvaluation, DecisionFailure> {
    let variables = variables.as_object().cloned().unwrap();
    evaluate_decision(drg, decision, &variables, Environment::at(0))
}

fn output(decision: &str, amount: i64, tier: &str) -> Json {
    let drg = drg(HIT_POLICIES);
    let variables = json!({"amount": amount, "customer": {"tier": tier}});
    evaluate(&drg, decision, variables).unwrap().output
}

fn failure(decision: &str, amount: i64, tier: &str) -> String {
    let drg = drg(HIT_POLICIES);
    let variables = json!({"amount": amount, "customer": {"tier": tier}});
    evaluate(&drg, decision, variables).unwrap_err().message
}

fn category(category: &str, score: i64) -> Json {
    json!({"category": category, "score": score})
}

#[test]
fn the_model_keeps_ids_names_and_hit_policies() {
    let drg = drg(HIT_POLICIES);
    assert_eq!(drg.id, "HitPolicies");
    assert_eq!(drg.name, "Hit policies");
    assert_eq!(drg.decisions.len(), 11);
    let DecisionLogic::Table(table) = &drg.decision("collectSum").unwrap().logic else {
        panic!("a table");
    };
    assert_eq!(table.hit_policy, HitPolicy::Collect(Some(Aggregation::Sum)));
    assert_eq!(table.rules.len(), 4);
    assert_eq!(table.inputs[1].name, "Tier");
    let DecisionLogic::Table(table) = &drg.decision("priority").unwrap().logic else {
        panic!("a table");
    };
    assert_eq!(
        table.outputs[0].values,
        [json!("high"), json!("gold"), json!("mid"), json!("low")]
    );
}

#[test]
fn unique_gives_the_one_match_and_fails_on_two() {
    assert_eq!(output("unique", 20, "silver"), category("low", 1));
    assert_eq!(output("unique", 5000, "silver"), category("high", 3));
    let message = failure("unique", 70, "gold");
    assert!(message.contains("decision 'unique'"), "{message}");
    assert!(
        message.contains("'unique_Rule_1', 'unique_Rule_2'"),
        "{message}"
    );
    // No match: the result is null, as in Zeebe.
    assert_eq!(output("unique", 5000, "bronze"), Json::Null);
}

#[test]
fn first_gives_the_first_match_in_rule_order() {
    assert_eq!(output("first", 700, "gold"), category("gold", 5));
    assert_eq!(output("first", 700, "bronze"), category("mid", 2));
}

#[test]
fn priority_ranks_by_the_output_values() {
    assert_eq!(output("priority", 700, "gold"), category("high", 3));
    assert_eq!(output("priority", 70, "gold"), category("gold", 5));
    assert_eq!(output("priority", 5000, "bronze"), Json::Null);
}

#[test]
fn any_needs_equal_outputs() {
    assert_eq!(output("any", 20, "silver"), category("low", 1));
    let message = failure("any", 700, "gold");
    assert!(message.contains("ANY"), "{message}");
    assert!(
        message.contains("'any_Rule_2', 'any_Rule_3', 'any_Rule_4'"),
        "{message}"
    );
}

#[test]
fn rule_order_lists_the_matches_in_rule_order() {
    assert_eq!(
        output("ruleOrder", 700, "gold"),
        json!([category("gold", 5), category("mid", 2), category("high", 3)])
    );
    assert_eq!(output("ruleOrder", 5000, "bronze"), json!([]));
}

#[test]
fn output_order_lists_the_matches_by_priority() {
    assert_eq!(
        output("outputOrder", 700, "gold"),
        json!([category("high", 3), category("gold", 5), category("mid", 2)])
    );
}

#[test]
fn collect_lists_and_aggregates() {
    assert_eq!(
        output("collect", 700, "gold"),
        json!([category("gold", 5), category("mid", 2), category("high", 3)])
    );
    assert_eq!(output("collectSum", 700, "gold"), json!(10));
    assert_eq!(output("collectMin", 700, "gold"), json!(2));
    assert_eq!(output("collectMax", 700, "gold"), json!(5));
    assert_eq!(output("collectCount", 700, "gold"), json!(3));
    assert_eq!(output("collectSum", 20, "silver"), json!(1));
    assert_eq!(output("collectSum", 5000, "bronze"), Json::Null);
    assert_eq!(output("collectCount", 5000, "bronze"), json!(0));
}

#[test]
fn the_evaluation_records_inputs_and_matched_rules() {
    let drg = drg(HIT_POLICIES);
    let variables = json!({"amount": 700, "customer": {"tier": "gold"}});
    let result = evaluate(&drg, "priority", variables).unwrap();
    assert_eq!(result.evaluated.len(), 1);
    let decision = &result.evaluated[0];
    assert_eq!(decision.decision_type, "DECISION_TABLE");
    assert_eq!(decision.decision_name, "Priority");
    assert_eq!(
        decision.evaluated_inputs,
        [
            EvaluatedInput {
                input_id: "priority_Input_1".into(),
                input_name: "Amount".into(),
                input_value: json!(700),
            },
            EvaluatedInput {
                input_id: "priority_Input_2".into(),
                input_name: "Tier".into(),
                input_value: json!("gold"),
            },
        ]
    );
    assert_eq!(decision.matched_rules.len(), 1);
    let rule = &decision.matched_rules[0];
    assert_eq!(
        (rule.rule_id.as_str(), rule.rule_index),
        ("priority_Rule_4", 4)
    );
    assert_eq!(rule.evaluated_outputs[0].output_name, "category");
    assert_eq!(rule.evaluated_outputs[1].output_value, json!(3));

    let collected = evaluate(
        &drg,
        "collectSum",
        json!({"amount": 700, "customer": {"tier": "gold"}}),
    )
    .unwrap();
    let indexes: Vec<usize> = collected.evaluated[0]
        .matched_rules
        .iter()
        .map(|rule| rule.rule_index)
        .collect();
    assert_eq!(indexes, [2, 3, 4]);
}

#[test]
fn required_decisions_are_evaluated_first_and_once() {
    let drg = drg(DISH);
    let result = evaluate(&drg, "menu", json!({"month": 10, "guestCount": 4})).unwrap();
    assert_eq!(result.output, json!("Fall menu: Spareribs"));
    let order: Vec<&str> = result
        .evaluated
        .iter()
        .map(|decision| decision.decision_id.as_str())
        .collect();
    assert_eq!(order, ["season", "dish", "menu"]);
    assert_eq!(result.evaluated[2].decision_type, "LITERAL_EXPRESSION");
    assert_eq!(result.evaluated[1].output, json!("Spareribs"));

    // An empty cell matches any input.
    let summer = evaluate(&drg, "dish", json!({"month": 7})).unwrap();
    assert_eq!(summer.output, json!("Light Salad and a nice Steak"));
    // A list of values in one cell.
    let stew = evaluate(&drg, "dish", json!({"month": 1, "guestCount": 12})).unwrap();
    assert_eq!(stew.output, json!("Stew"));
}

#[test]
fn a_failure_names_the_decision_and_keeps_what_was_evaluated() {
    let drg = drg(DISH);
    // A string where a number is compared: the season table cannot be evaluated.
    let failure = evaluate(&drg, "menu", json!({"month": "May"})).unwrap_err();
    assert_eq!(failure.failed_decision_id, "season");
    assert!(
        failure.message.contains("Season_Rule_1"),
        "{}",
        failure.message
    );
    assert_eq!(failure.evaluated.len(), 1);
    let unknown = evaluate(&drg, "nope", json!({})).unwrap_err();
    assert!(unknown.message.contains("'nope'"), "{}", unknown.message);
}

#[test]
fn evaluation_is_deterministic() {
    let drg = drg(HIT_POLICIES);
    let variables = json!({"amount": 700, "customer": {"tier": "gold"}});
    let first = evaluate(&drg, "outputOrder", variables.clone()).unwrap();
    for _ in 0..10 {
        assert_eq!(
            evaluate(&drg, "outputOrder", variables.clone()).unwrap(),
            first
        );
    }
}

fn problems(xml: &str) -> String {
    parse_dmn("bad.dmn", xml.as_bytes())
        .unwrap_err()
        .problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_invalid_cell_is_refused_with_decision_rule_and_column() {
    let broken = DISH.replace("<text>[6..8]</text>", "<text>[6..</text>");
    let message = problems(&broken);
    assert!(message.contains("'bad.dmn'"), "{message}");
    assert!(message.contains("element 'season'"), "{message}");
    assert!(
        message.contains("rule 'Season_Rule_2' (rule 2)"),
        "{message}"
    );
    assert!(
        message.contains("input column 'Input_Month' (column 1)"),
        "{message}"
    );
    assert!(message.contains("line "), "{message}");

    let broken = DISH.replace("<text>\"Roastbeef\"</text>", "<text>\"Roastbeef</text>");
    let message = problems(&broken);
    assert!(
        message.contains("rule 'Dish_Rule_2' (rule 2), output column 'Output_Dish'"),
        "{message}"
    );

    let broken = DISH.replace("<text>guestCount</text>", "<text>guestCount +</text>");
    let message = problems(&broken);
    assert!(
        message.contains("input column 'Input_Guests' (column 2)"),
        "{message}"
    );
}

#[test]
fn unsupported_or_inconsistent_models_are_refused() {
    let message = problems(&HIT_POLICIES.replace("hitPolicy=\"FIRST\"", "hitPolicy=\"LAST\""));
    assert!(
        message.contains("element 'first'") && message.contains("'LAST'"),
        "{message}"
    );

    let message = problems(&HIT_POLICIES.replace(
        "hitPolicy=\"FIRST\"",
        "hitPolicy=\"FIRST\" aggregation=\"SUM\"",
    ));
    assert!(
        message.contains("only allowed with the COLLECT"),
        "{message}"
    );

    let message = problems(&DISH.replace("href=\"#season\" />\n    </informationRequirement>\n    <informationRequirement id=\"InformationRequirement_2\">", "href=\"#menu\" />\n    </informationRequirement>\n    <informationRequirement id=\"InformationRequirement_2\">"));
    assert!(message.contains("cycle"), "{message}");

    let message = problems(&DISH.replace("#season\" />\n    </informationRequirement>\n    <informationRequirement id=\"InformationRequirement_2\">", "#missing\" />\n    </informationRequirement>\n    <informationRequirement id=\"InformationRequirement_2\">"));
    assert!(message.contains("'#missing'"), "{message}");

    let message = problems(&DISH.replace(
        "<inputData id=\"InputData_Guests\" name=\"Guest count\" />",
        "<businessKnowledgeModel id=\"Bkm\" name=\"Bkm\" />",
    ));
    assert!(
        message.contains("'businessKnowledgeModel' elements are not supported"),
        "{message}"
    );

    // A rule with a missing cell.
    let message = problems(&DISH.replacen(
        "<inputEntry id=\"Dish_In_1_2\">\n          <text>&lt;= 8</text>\n        </inputEntry>\n",
        "",
        1,
    ));
    assert!(
        message.contains("rule 'Dish_Rule_1' (rule 1) has 1 input entries"),
        "{message}"
    );

    assert!(problems("<definitions/>").contains("expected a DMN 1.3 'definitions'"));
    assert!(problems("not xml").contains("not valid XML"));
}

/// Mutated models (a byte dropped, doubled or replaced, FEEL-ish characters among the
/// replacements) are refused or evaluated, never a panic: a resource comes from the
/// network.
#[test]
fn mutated_models_never_panic() {
    let sources = [DISH.as_bytes(), HIT_POLICIES.as_bytes()];
    let replacements = b"<>[]()\"-,.?=!0 a\n";
    let variables =
        json!({"month": 4, "guestCount": 9, "amount": 600, "customer": {"tier": "gold"}});
    let variables = variables.as_object().cloned().unwrap();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..1_500 {
        let source = sources[round % 2];
        let mut bytes = source.to_vec();
        for _ in 0..(1 + next() % 3) {
            let at = (next() % bytes.len() as u64) as usize;
            match next() % 3 {
                0 => {
                    bytes.remove(at);
                }
                1 => bytes.insert(at, bytes[at]),
                _ => bytes[at] = replacements[(next() % replacements.len() as u64) as usize],
            }
        }
        if let Ok(drg) = parse_dmn("mutated.dmn", &bytes) {
            for decision in &drg.decisions {
                let _ = evaluate_decision(&drg, &decision.id, &variables, Environment::at(0));
            }
        }
    }
}

#[test]
fn a_decision_result_must_have_its_variables_type() {
    let drg = drg(DISH);
    let menu = drg.decision("menu").unwrap();
    assert_eq!(menu.result_type, Some(ResultType::String));

    let as_number = DISH.replace(
        r#"name="menu" typeRef="string""#,
        r#"name="menu" typeRef="feel:number""#,
    );
    let drg = parse_dmn("test.dmn", as_number.as_bytes()).unwrap();
    let failure = evaluate(&drg, "menu", json!({"month": 10, "guestCount": 4})).unwrap_err();
    assert_eq!(failure.failed_decision_id, "menu");
    assert_eq!(
        failure.message,
        "failed to evaluate decision 'menu': expected 'number' but found '\"Fall menu: Spareribs\"'"
    );

    // A type Zeebe's engine does not know is not checked.
    let custom = DISH.replace(r#"typeRef="string""#, r#"typeRef="MenuText""#);
    let drg = parse_dmn("test.dmn", custom.as_bytes()).unwrap();
    assert!(evaluate(&drg, "menu", json!({"month": 10, "guestCount": 4})).is_ok());

    let as_date = DISH.replace(r#"typeRef="string""#, r#"typeRef="date""#);
    let text = problems(&as_date);
    assert!(
        text.contains("menu") && text.contains("result typeRef 'date' is not supported"),
        "{text}"
    );
}

/// An input expression that builds a date is tested as a date (the record shows its ISO
/// text), so temporal comparisons in the input entries work.
#[test]
fn an_input_expression_keeps_its_feel_type_for_the_input_entries() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="Dates" name="Dates" namespace="http://camunda.org/schema/1.0/dmn">
  <decision id="term" name="Term">
    <decisionTable id="Table_Term">
      <input id="Input_Signed" label="Signed">
        <inputExpression id="InputExpression_Signed" typeRef="date">
          <text>date(signedOn)</text>
        </inputExpression>
      </input>
      <output id="Output_Term" name="term" typeRef="string" />
      <rule id="Rule_Old">
        <inputEntry id="In_Old"><text>&lt; date("2026-01-01")</text></inputEntry>
        <outputEntry id="Out_Old"><text>"old"</text></outputEntry>
      </rule>
      <rule id="Rule_New">
        <inputEntry id="In_New"><text>[date("2026-01-01")..date("2027-01-01")[</text></inputEntry>
        <outputEntry id="Out_New"><text>"new"</text></outputEntry>
      </rule>
    </decisionTable>
  </decision>
</definitions>"#;
    let drg = drg(xml);
    let result = evaluate(&drg, "term", json!({"signedOn": "2026-12-04"})).unwrap();
    assert_eq!(result.output, json!("new"));
    let inputs = &result.evaluated[0].evaluated_inputs;
    assert_eq!(inputs[0].input_value, json!("2026-12-04"));
    let old = evaluate(&drg, "term", json!({"signedOn": "2025-06-30"})).unwrap();
    assert_eq!(old.output, json!("old"));
}
