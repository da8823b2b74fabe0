//! Calling function values (FEEL lambdas, with the bindings they captured), by position
//! or by parameter name.

use std::sync::Arc;

use super::{CALL_COST, Evaluator, Local, MAX_DEPTH, Outcome, instance_of, too_deep};
use crate::ast::{Arguments, Expr};
use crate::value::{self, Function, Value};

impl<'a> Evaluator<'a> {
    /// `f(1, 2)`, `f(b: 2, a: 1)`: calls the function value `callee` evaluates to.
    pub(super) fn apply(&mut self, callee: &'a Expr, arguments: &'a Arguments) -> Outcome {
        let function = match self.eval(callee)? {
            Value::Function(function) => function,
            other => {
                let shown = match callee {
                    Expr::Name(name) => format!("'{name}'"),
                    Expr::NamePath(root, keys) => format!("'{root}.{}'", keys.join(".")),
                    _ => "the called value".to_owned(),
                };
                return Err(format!(
                    "{shown} is not a function but {}",
                    other.describe()
                ));
            }
        };
        let values = match arguments {
            Arguments::Positional(arguments) => {
                let mut values = Vec::with_capacity(arguments.len());
                for argument in arguments {
                    values.push(self.eval(argument)?);
                }
                values
            }
            Arguments::Named(arguments) => {
                let params = &function.lambda.params;
                for (name, _) in arguments {
                    if !params.iter().any(|(param, _)| param == name) {
                        return Err(format!(
                            "{} has no parameter '{name}'",
                            Value::Function(function.clone()).to_feel_string()
                        ));
                    }
                }
                let mut values = Vec::with_capacity(params.len());
                for (param, _) in params {
                    match arguments.iter().find(|(name, _)| name == param) {
                        Some((_, argument)) => values.push(self.eval(argument)?),
                        None => {
                            return Err(format!(
                                "{} is called without its parameter '{param}'",
                                Value::Function(function.clone()).to_feel_string()
                            ));
                        }
                    }
                }
                values
            }
        };
        self.call_function(&function, values)
    }

    /// Runs a function value with `arguments` (in parameter order). The body runs in an
    /// evaluator of its own that sees the parameters, the captured bindings and the
    /// variables, and shares this evaluation's budgets.
    pub(crate) fn call_function(
        &mut self,
        function: &Arc<Function>,
        arguments: Vec<Value>,
    ) -> Outcome {
        let function = Arc::clone(function);
        let params = &function.lambda.params;
        if arguments.len() != params.len() {
            return Err(format!(
                "{} takes {} argument{}, but {} were given",
                Value::Function(function.clone()).to_feel_string(),
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                arguments.len()
            ));
        }
        for ((param, declared), argument) in params.iter().zip(&arguments) {
            if let Some(declared) = declared
                && !matches!(argument, Value::Null)
                && !instance_of(argument, *declared)
            {
                return Err(format!(
                    "the parameter '{param}' of {} expects {}, but got {}",
                    Value::Function(function.clone()).to_feel_string(),
                    declared.name(),
                    argument.describe()
                ));
            }
        }
        self.step()?;
        if self.shared.depth + CALL_COST > MAX_DEPTH {
            return Err(too_deep());
        }
        let mut inner = Evaluator {
            variables: self.variables,
            environment: self.environment,
            locals: Vec::with_capacity(function.captured.len() + params.len()),
            shared: std::mem::take(&mut self.shared),
        };
        inner.shared.depth += CALL_COST;
        for (name, value) in &function.captured {
            inner.locals.push(Local::Named(name, value.clone()));
        }
        for ((param, _), argument) in params.iter().zip(arguments) {
            inner.locals.push(Local::Named(param, argument));
        }
        let result = inner.eval(&function.lambda.body);
        self.shared = std::mem::take(&mut inner.shared);
        self.shared.depth -= CALL_COST;
        let result = result?;
        // A function calling itself could otherwise wrap its result level upon level.
        if value::too_nested(&result) {
            return Err(format!(
                "the result of {} is nested more than {} levels deep",
                Value::Function(function.clone()).to_feel_string(),
                value::MAX_VALUE_NESTING
            ));
        }
        Ok(result)
    }
}
