//! Unary tests (`< 5`, `[1..3]`, `"a", "b"`) against an input value `?`: the input
//! entries of DMN decision tables.

use super::comparison::{compare, equals, range_contains};
use super::{Evaluator, Local, Outcome};
use crate::ast::UnaryTest;
use crate::value::Value;

impl<'a> Evaluator<'a> {
    /// Binds the input of a decision table's input entry to `?`.
    pub(crate) fn bind_input(&mut self, input: Value) {
        self.locals.push(Local::Named("?", input));
    }

    /// Whether `input` passes one test of an input entry. A test whose value is a
    /// boolean is the answer itself when it reads `?` or the input is not a boolean
    /// (`? > 5`, `contains(?, "x")`); otherwise the input must equal the value, lie in
    /// the range, or be an item of the list.
    pub(crate) fn input_entry_test(
        &mut self,
        input: &Value,
        test: &'a UnaryTest,
        reads_input: bool,
    ) -> Result<bool, String> {
        if let UnaryTest::Value(operand) = test {
            let value = self.eval(operand)?;
            if let Value::Bool(answer) = value
                && (reads_input || !matches!(input, Value::Bool(_)))
            {
                return Ok(answer);
            }
            return Ok(match value {
                Value::Range(range) => range_contains(&range, input)? == Value::Bool(true),
                Value::List(items) if !matches!(input, Value::List(_)) => items
                    .iter()
                    .any(|item| equals(input, item).unwrap_or(Some(false)) == Some(true)),
                other => equals(input, &other).unwrap_or(Some(false)) == Some(true),
            });
        }
        Ok(self.unary_test(input, test)? == Value::Bool(true))
    }

    pub(super) fn unary_test(&mut self, value: &Value, test: &'a UnaryTest) -> Outcome {
        match test {
            UnaryTest::Compare(op, operand) => {
                let operand = self.eval(operand)?;
                compare(*op, value, &operand)
            }
            UnaryTest::Value(operand) => match self.eval(operand)? {
                Value::Range(range) => range_contains(&range, value),
                // Membership: an item of another type is simply not a match, so
                // `x in (1, "a")` works for numbers and strings alike.
                Value::List(items) if !matches!(value, Value::List(_)) => {
                    for item in &items {
                        self.step()?;
                        if equals(value, item).unwrap_or(Some(false)) == Some(true) {
                            return Ok(Value::Bool(true));
                        }
                    }
                    Ok(Value::Bool(false))
                }
                other => Ok(Value::Bool(
                    equals(value, &other).unwrap_or(Some(false)) == Some(true),
                )),
            },
        }
    }
}
