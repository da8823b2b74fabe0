//! The parsed form of an expression.

use std::sync::Arc;

use rust_decimal::Decimal;

use crate::builtins::Builtin;
use crate::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Null,
    /// An optional parameter skipped in a call with named arguments, before one that is
    /// given: `null`, but told apart from a written `null` (see `from_ai`).
    Omitted,
    Bool(bool),
    Number(Decimal),
    String(String),
    /// A name: a local binding (loop variable, `item`, context entry) or a variable.
    Name(String),
    /// `a.b.c` on a name, flattened at parse time so evaluation walks the variable's
    /// JSON without allocating.
    NamePath(String, Vec<String>),
    Path(Box<Expr>, String),
    Filter(Box<Expr>, Box<Expr>),
    /// A built-in call; named arguments were put in order by the parser.
    Call(Builtin, Vec<Expr>),
    /// A call of a function value: `f(1)` with `f` bound in the expression,
    /// `(function(x) x + 1)(2)`.
    Apply(Box<Expr>, Arguments),
    /// `function(a, b) body`.
    Function(Arc<Lambda>),
    /// A value known when parsing: a temporal literal `@"2025-01-01"`.
    Constant(Value),
    List(Vec<Expr>),
    Context(Vec<(String, Expr)>),
    Range(Box<RangeExpr>),
    Negate(Box<Expr>),
    Arithmetic(ArithmeticOp, Box<Expr>, Box<Expr>),
    Compare(CompareOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Between(Box<Expr>, Box<Expr>, Box<Expr>),
    In(Box<Expr>, Vec<UnaryTest>),
    InstanceOf(Box<Expr>, TypeName),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    For(Vec<(String, Expr)>, Box<Expr>),
    Quantified {
        every: bool,
        bindings: Vec<(String, Expr)>,
        condition: Box<Expr>,
    },
}

/// The arguments of a call of a function value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arguments {
    Positional(Vec<Expr>),
    Named(Vec<(String, Expr)>),
}

/// A function literal. Shared by every function value made from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lambda {
    /// Parameter names, each with its declared type if written (`function(x: number)`).
    pub(crate) params: Vec<(String, Option<TypeName>)>,
    pub(crate) body: Expr,
    /// Names the body reads besides its parameters: the enclosing bindings among them
    /// are captured when the function value is made.
    pub(crate) free: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RangeExpr {
    pub(crate) start: Expr,
    pub(crate) start_closed: bool,
    pub(crate) end: Expr,
    pub(crate) end_closed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithmeticOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Power,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompareOp {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

/// One test on the right of `in`: `x in (> 5, [1..3], "a")`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum UnaryTest {
    /// `< 5`, `>= limit`.
    Compare(CompareOp, Expr),
    /// A value (equality), a range (containment) or a list (membership).
    Value(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeName {
    Any,
    Null,
    Boolean,
    Number,
    String,
    Date,
    Time,
    DateTime,
    DayTimeDuration,
    YearMonthDuration,
    List,
    Context,
    Range,
    Function,
}

impl TypeName {
    pub(crate) fn name(self) -> &'static str {
        match self {
            TypeName::Any => "Any",
            TypeName::Null => "Null",
            TypeName::Boolean => "boolean",
            TypeName::Number => "number",
            TypeName::String => "string",
            TypeName::Date => "date",
            TypeName::Time => "time",
            TypeName::DateTime => "date and time",
            TypeName::DayTimeDuration => "days and time duration",
            TypeName::YearMonthDuration => "years and months duration",
            TypeName::List => "list",
            TypeName::Context => "context",
            TypeName::Range => "range",
            TypeName::Function => "function",
        }
    }

    pub(crate) fn from_words(words: &str) -> Option<TypeName> {
        Some(match words {
            "Any" => TypeName::Any,
            "Null" => TypeName::Null,
            "boolean" => TypeName::Boolean,
            "number" => TypeName::Number,
            "string" => TypeName::String,
            "date" => TypeName::Date,
            "time" => TypeName::Time,
            "date and time" => TypeName::DateTime,
            "days and time duration" => TypeName::DayTimeDuration,
            "years and months duration" => TypeName::YearMonthDuration,
            "list" => TypeName::List,
            "context" => TypeName::Context,
            "range" => TypeName::Range,
            "function" => TypeName::Function,
            _ => return None,
        })
    }
}

/// Names the expression reads from outside: variables, minus names bound inside it.
pub(crate) fn free_names(expr: &Expr, bound: &mut Vec<String>, out: &mut Vec<String>) {
    match expr {
        Expr::Null
        | Expr::Omitted
        | Expr::Bool(_)
        | Expr::Number(_)
        | Expr::String(_)
        | Expr::Constant(_) => {}
        Expr::Name(name) | Expr::NamePath(name, _) => {
            if !bound.iter().rev().any(|b| b == name) {
                out.push(name.clone());
            }
        }
        Expr::Path(base, _) => free_names(base, bound, out),
        Expr::Filter(base, filter) => {
            free_names(base, bound, out);
            // Inside a filter, `item` is the element; other names may be its entries
            // or variables, so they are reported (the list may be read too broadly).
            bound.push("item".to_owned());
            free_names(filter, bound, out);
            bound.pop();
        }
        Expr::Call(_, arguments) | Expr::List(arguments) => {
            for argument in arguments {
                free_names(argument, bound, out);
            }
        }
        Expr::Apply(callee, arguments) => {
            free_names(callee, bound, out);
            match arguments {
                Arguments::Positional(arguments) => {
                    for argument in arguments {
                        free_names(argument, bound, out);
                    }
                }
                Arguments::Named(arguments) => {
                    for (_, argument) in arguments {
                        free_names(argument, bound, out);
                    }
                }
            }
        }
        Expr::Function(lambda) => {
            for name in &lambda.free {
                if !bound.iter().rev().any(|b| b == name) {
                    out.push(name.clone());
                }
            }
        }
        Expr::Context(entries) => {
            let depth = bound.len();
            for (key, value) in entries {
                free_names(value, bound, out);
                bound.push(key.clone());
            }
            bound.truncate(depth);
        }
        Expr::Range(range) => {
            free_names(&range.start, bound, out);
            free_names(&range.end, bound, out);
        }
        Expr::Negate(inner) | Expr::InstanceOf(inner, _) => free_names(inner, bound, out),
        Expr::Arithmetic(_, left, right)
        | Expr::Compare(_, left, right)
        | Expr::And(left, right)
        | Expr::Or(left, right) => {
            free_names(left, bound, out);
            free_names(right, bound, out);
        }
        Expr::Between(value, low, high) | Expr::If(value, low, high) => {
            free_names(value, bound, out);
            free_names(low, bound, out);
            free_names(high, bound, out);
        }
        Expr::In(value, tests) => {
            free_names(value, bound, out);
            for test in tests {
                match test {
                    UnaryTest::Compare(_, operand) | UnaryTest::Value(operand) => {
                        free_names(operand, bound, out)
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
            let depth = bound.len();
            for (name, source) in bindings {
                free_names(source, bound, out);
                bound.push(name.clone());
            }
            if matches!(expr, Expr::For(..)) {
                bound.push("partial".to_owned());
            }
            free_names(body, bound, out);
            bound.truncate(depth);
        }
    }
}
