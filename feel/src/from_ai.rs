//! The `fromAi(...)` calls of an expression, argument by argument as written. An AI agent
//! job worker describes a tool's inputs to the model from them, so an engine reads them
//! from the model at deploy time, without evaluating anything.

use serde_json::{Map, Value as Json};

use crate::ast::{Arguments, Expr, UnaryTest};
use crate::builtins::Builtin;
use crate::value::number_to_json;

/// One `fromAi(value, description, type, schema, options)` call. Named arguments are in
/// their parameter's place; a parameter that was not given is `None` (an explicit `null`
/// is `Some(FromAiArgument::Literal(Json::Null))`).
#[derive(Debug, Clone, PartialEq)]
pub struct FromAiCall {
    pub value: FromAiArgument,
    pub description: Option<FromAiArgument>,
    pub type_name: Option<FromAiArgument>,
    pub schema: Option<FromAiArgument>,
    pub options: Option<FromAiArgument>,
}

/// What one argument of a `fromAi` call is, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum FromAiArgument {
    /// A variable or a path into one: `toolCall.searchQuery` is
    /// `["toolCall", "searchQuery"]`.
    Reference(Vec<String>),
    /// A literal made only of literals: `null`, a boolean, a number, a string, or a list
    /// or context of such literals (`{enum: ["a", "b"], minimum: 0}`).
    Literal(Json),
    /// Anything else, described for a message: "a call of 'string join'", "an
    /// addition", "a context whose entry 'enum' is a variable reference".
    Computed(String),
}

/// The `fromAi` calls of `expr`, in the order they are written. The arguments of a call
/// are not searched for more calls: they describe the one call.
pub(crate) fn from_ai_calls(expr: &Expr) -> Vec<FromAiCall> {
    let mut calls = Vec::new();
    walk(expr, &mut calls);
    calls
}

fn walk(expr: &Expr, calls: &mut Vec<FromAiCall>) {
    match expr {
        Expr::Call(Builtin::FromAi, arguments) => calls.push(call_of(arguments)),
        Expr::Null
        | Expr::Omitted
        | Expr::Bool(_)
        | Expr::Number(_)
        | Expr::String(_)
        | Expr::Constant(_)
        | Expr::Name(_)
        | Expr::NamePath(..) => {}
        Expr::Path(base, _) | Expr::Negate(base) | Expr::InstanceOf(base, _) => walk(base, calls),
        Expr::Filter(left, right)
        | Expr::Arithmetic(_, left, right)
        | Expr::Compare(_, left, right)
        | Expr::And(left, right)
        | Expr::Or(left, right) => {
            walk(left, calls);
            walk(right, calls);
        }
        Expr::Between(first, second, third) | Expr::If(first, second, third) => {
            walk(first, calls);
            walk(second, calls);
            walk(third, calls);
        }
        Expr::Call(_, arguments) | Expr::List(arguments) => walk_all(arguments, calls),
        Expr::Apply(callee, arguments) => {
            walk(callee, calls);
            match arguments {
                Arguments::Positional(arguments) => walk_all(arguments, calls),
                Arguments::Named(arguments) => walk_all(arguments.iter().map(|(_, a)| a), calls),
            }
        }
        Expr::Function(lambda) => walk(&lambda.body, calls),
        Expr::Context(entries) => walk_all(entries.iter().map(|(_, value)| value), calls),
        Expr::Range(range) => {
            walk(&range.start, calls);
            walk(&range.end, calls);
        }
        Expr::In(value, tests) => {
            walk(value, calls);
            for test in tests {
                match test {
                    UnaryTest::Compare(_, operand) | UnaryTest::Value(operand) => {
                        walk(operand, calls)
                    }
                }
            }
        }
        Expr::For(bindings, body)
        | Expr::Quantified {
            bindings,
            condition: body,
            ..
        } => {
            walk_all(bindings.iter().map(|(_, source)| source), calls);
            walk(body, calls);
        }
    }
}

fn walk_all<'a>(exprs: impl IntoIterator<Item = &'a Expr>, calls: &mut Vec<FromAiCall>) {
    for expr in exprs {
        walk(expr, calls);
    }
}

fn call_of(arguments: &[Expr]) -> FromAiCall {
    // The parser checked the count (1 to 5) and put named arguments in order, with a
    // skipped one `Omitted`.
    let argument = |index: usize| match arguments.get(index) {
        None | Some(Expr::Omitted) => None,
        Some(expr) => Some(argument_of(expr)),
    };
    FromAiCall {
        value: argument(0).unwrap_or(FromAiArgument::Literal(Json::Null)),
        description: argument(1),
        type_name: argument(2),
        schema: argument(3),
        options: argument(4),
    }
}

fn argument_of(expr: &Expr) -> FromAiArgument {
    match expr {
        Expr::Name(name) => FromAiArgument::Reference(vec![name.clone()]),
        Expr::NamePath(root, keys) => {
            let mut names = Vec::with_capacity(keys.len() + 1);
            names.push(root.clone());
            names.extend(keys.iter().cloned());
            FromAiArgument::Reference(names)
        }
        other => match literal(other) {
            Ok(json) => FromAiArgument::Literal(json),
            Err(what) => FromAiArgument::Computed(what),
        },
    }
}

/// The JSON of a literal, or what the expression is instead.
fn literal(expr: &Expr) -> Result<Json, String> {
    Ok(match expr {
        Expr::Null | Expr::Omitted => Json::Null,
        Expr::Bool(value) => Json::Bool(*value),
        Expr::Number(number) => number_to_json(*number),
        Expr::String(text) => Json::String(text.clone()),
        Expr::List(items) => Json::Array(
            items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    literal(item).map_err(|what| format!("a list whose item {index} is {what}"))
                })
                .collect::<Result<_, _>>()?,
        ),
        Expr::Context(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                let value = literal(value)
                    .map_err(|what| format!("a context whose entry '{key}' is {what}"))?;
                map.insert(key.clone(), value);
            }
            Json::Object(map)
        }
        other => return Err(describe(other)),
    })
}

/// What an expression that is not a literal is, for a message.
fn describe(expr: &Expr) -> String {
    match expr {
        Expr::Name(_) | Expr::NamePath(..) => "a variable reference".to_owned(),
        Expr::Constant(_) => "a temporal literal".to_owned(),
        Expr::Call(builtin, _) => format!("a call of '{}'", builtin.name()),
        Expr::Apply(..) => "a function call".to_owned(),
        Expr::Function(_) => "a function definition".to_owned(),
        Expr::Path(..) => "a path expression".to_owned(),
        Expr::Filter(..) => "a filter expression".to_owned(),
        Expr::Range(_) => "a range".to_owned(),
        Expr::Negate(_) => "a negation".to_owned(),
        Expr::Arithmetic(..) => "an arithmetic expression".to_owned(),
        Expr::Compare(..) => "a comparison".to_owned(),
        Expr::And(..) | Expr::Or(..) => "a boolean expression".to_owned(),
        Expr::Between(..) => "a 'between' test".to_owned(),
        Expr::In(..) => "an 'in' test".to_owned(),
        Expr::InstanceOf(..) => "an 'instance of' test".to_owned(),
        Expr::If(..) => "an if expression".to_owned(),
        Expr::For(..) => "a for expression".to_owned(),
        Expr::Quantified { .. } => "a quantified expression".to_owned(),
        Expr::Null
        | Expr::Omitted
        | Expr::Bool(_)
        | Expr::Number(_)
        | Expr::String(_)
        | Expr::List(_)
        | Expr::Context(_) => "a literal".to_owned(),
    }
}
