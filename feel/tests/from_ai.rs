//! `Expression::from_ai_calls`: the `fromAi(...)` calls of an expression, with their
//! arguments as written.

use rill_feel::{Expression, FromAiArgument, FromAiCall};
use serde_json::{Map, json};

fn calls(source: &str) -> Vec<FromAiCall> {
    Expression::compile(source)
        .unwrap_or_else(|error| panic!("{source}: {error}"))
        .from_ai_calls()
}

fn reference(names: &[&str]) -> FromAiArgument {
    FromAiArgument::Reference(names.iter().map(|name| (*name).to_owned()).collect())
}

fn literal(value: serde_json::Value) -> Option<FromAiArgument> {
    Some(FromAiArgument::Literal(value))
}

fn computed(what: &str) -> Option<FromAiArgument> {
    Some(FromAiArgument::Computed(what.to_owned()))
}

fn call(value: FromAiArgument) -> FromAiCall {
    FromAiCall {
        value,
        description: None,
        type_name: None,
        schema: None,
        options: None,
    }
}

#[test]
fn an_expression_without_from_ai_has_no_calls() {
    assert_eq!(calls("\"hello\""), []);
    assert_eq!(calls("toolCall.a + 1"), []);
    assert_eq!(calls("{a: string(x), b: [1, 2]}"), []);
}

#[test]
fn positional_arguments_are_read_in_order() {
    assert_eq!(
        calls("fromAi(toolCall.city)"),
        [call(reference(&["toolCall", "city"]))]
    );
    assert_eq!(
        calls(
            r#"fromAi(toolCall.days, "Days ahead", "integer", {minimum: 0, maximum: 7.5, "enum": [1, 2, -3]}, {required: false})"#
        ),
        [FromAiCall {
            value: reference(&["toolCall", "days"]),
            description: literal(json!("Days ahead")),
            type_name: literal(json!("integer")),
            schema: literal(json!({"minimum": 0, "maximum": 7.5, "enum": [1, 2, -3]})),
            options: literal(json!({"required": false})),
        }]
    );
}

#[test]
fn named_arguments_are_put_in_place_and_a_skipped_one_is_absent_not_null() {
    let expected = FromAiCall {
        value: reference(&["toolCall", "kind"]),
        description: None,
        type_name: literal(json!("string")),
        schema: None,
        options: literal(json!({"required": false})),
    };
    assert_eq!(
        calls(r#"fromAi(options: {required: false}, type: "string", value: toolCall.kind)"#),
        [expected]
    );
    // A written null is a literal null.
    assert_eq!(
        calls(r#"fromAi(toolCall.kind, null, "string")"#)[0].description,
        literal(json!(null))
    );
}

#[test]
fn calls_are_found_anywhere_in_source_order() {
    let found = calls(
        r#"{
          url: "https://example.org/" + string(fromAi(toolCall.path, "The path")),
          list: [fromAi(a), if fromAi(toolCall.flag) then fromAi(b.c.d) else null],
          total: sum(for x in xs return x * fromAi(toolCall.factor)),
          inner: (function(y) fromAi(toolCall.inLambda))(1)
        }"#,
    );
    let names: Vec<FromAiArgument> = found.into_iter().map(|call| call.value).collect();
    assert_eq!(
        names,
        [
            reference(&["toolCall", "path"]),
            reference(&["a"]),
            reference(&["toolCall", "flag"]),
            reference(&["b", "c", "d"]),
            reference(&["toolCall", "factor"]),
            reference(&["toolCall", "inLambda"]),
        ]
    );
    // The same call twice is listed twice.
    assert_eq!(calls("fromAi(toolCall.a) + fromAi(toolCall.a)").len(), 2);
}

#[test]
fn arguments_that_are_not_literals_say_what_they_are() {
    let found = calls(
        r#"fromAi(fromAi(toolCall.a), string join(["a", "b"], " "), "str" + "ing", {enum: x}, [1])"#,
    );
    assert_eq!(
        found,
        [FromAiCall {
            value: FromAiArgument::Computed("a call of 'fromAi'".to_owned()),
            description: computed("a call of 'string join'"),
            type_name: computed("an arithmetic expression"),
            schema: computed("a context whose entry 'enum' is a variable reference"),
            options: literal(json!([1])),
        }],
        "the arguments of a call are not searched for more calls"
    );
    assert_eq!(
        calls(r#"fromAi("toolCall.a", @"2025-01-01")"#),
        [FromAiCall {
            value: FromAiArgument::Literal(json!("toolCall.a")),
            description: computed("a temporal literal"),
            ..call(FromAiArgument::Literal(json!(null)))
        }]
    );
    assert_eq!(
        calls("fromAi(x[1], null, null, {a: {b: [1, {c: y}]}})")[0].schema,
        computed(
            "a context whose entry 'a' is a context whose entry 'b' is a list whose item 1 is a context whose entry 'c' is a variable reference"
        )
    );
}

#[test]
fn a_skipped_named_argument_still_evaluates_to_null() {
    // `fromAi` returns its value whatever else is given; the other calls' results do not
    // change with `Omitted` in place of `null`.
    let expression =
        Expression::compile(r#"string join(list: ["a", "b"], prefix: "<")"#).expect("compiles");
    assert_eq!(expression.evaluate(&Map::new(), 0), Ok(json!("<ab")));
    let expression =
        Expression::compile(r#"fromAi(type: "number", value: toolCall.n)"#).expect("compiles");
    let variables = json!({"toolCall": {"n": 4}});
    assert_eq!(
        expression.evaluate(variables.as_object().expect("object"), 0),
        Ok(json!(4))
    );
}
