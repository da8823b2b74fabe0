//! Boolean functions: `not`, `is defined`, and Camunda's `get or else` and `assert`.

use super::{Arguments, misrouted};
use crate::builtins::Builtin;
use crate::eval::Outcome;
use crate::value::Value;

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(builtin: Builtin, mut args: Arguments) -> Outcome {
    use Builtin as B;
    match builtin {
        B::Not => Ok(match args.take(0) {
            Value::Bool(value) => Value::Bool(!value),
            _ => Value::Null,
        }),
        B::IsDefined => Ok(Value::Bool(args.take(0) != Value::Null)),
        // Camunda's extension: the value, or the default when the value is null.
        B::GetOrElse => Ok(match args.take(0) {
            Value::Null => args.take(1),
            value => value,
        }),
        // Camunda's extension: the value if the condition holds, else a failure whose
        // message is the cause (so a model can raise a clear incident).
        B::Assert => {
            let (value, condition) = (args.take(0), args.take(1));
            if condition == Value::Bool(true) {
                return Ok(value);
            }
            Err(match args.take(2) {
                Value::String(cause) => cause,
                Value::Null => format!("the assertion failed for {}", value.describe()),
                other => format!("the assertion failed: {}", other.to_feel_string()),
            })
        }
        other => Err(misrouted(other)),
    }
}
