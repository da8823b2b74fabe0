//! Numeric functions: rounding, `abs`, `modulo`, `sqrt`, `log`, `exp`, `odd`, `even`
//! and `random number`.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use super::{Arguments, misrouted};
use crate::builtins::Builtin;
use crate::eval::{Evaluator, Outcome, integer};
use crate::value::{self, Value};

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(
    evaluator: &mut Evaluator<'_>,
    builtin: Builtin,
    mut args: Arguments,
) -> Outcome {
    let name = args.name;
    use Builtin as B;
    match builtin {
        B::RandomNumber => {
            // 18 random decimal digits in [0, 1); the modulo bias is below 1e-19.
            const SCALE: u64 = 1_000_000_000_000_000_000;
            let digits = evaluator.draw() % SCALE;
            Ok(Value::Number(
                Decimal::from_i128_with_scale(i128::from(digits), 18).normalize(),
            ))
        }
        B::Decimal => round(&mut args, RoundingStrategy::MidpointNearestEven, true),
        B::Floor => round(&mut args, RoundingStrategy::ToNegativeInfinity, false),
        B::Ceiling => round(&mut args, RoundingStrategy::ToPositiveInfinity, false),
        B::RoundUp => round(&mut args, RoundingStrategy::AwayFromZero, true),
        B::RoundDown => round(&mut args, RoundingStrategy::ToZero, true),
        B::RoundHalfUp => round(&mut args, RoundingStrategy::MidpointAwayFromZero, true),
        B::RoundHalfDown => round(&mut args, RoundingStrategy::MidpointTowardZero, true),
        B::Abs => match args.take(0) {
            Value::Null => Ok(Value::Null),
            Value::Number(n) => Ok(Value::Number(n.abs())),
            Value::DayTime(millis) => millis
                .checked_abs()
                .map(Value::DayTime)
                .ok_or_else(|| format!("{name}(): the result is too large")),
            Value::YearMonth(months) => months
                .checked_abs()
                .map(Value::YearMonth)
                .ok_or_else(|| format!("{name}(): the result is too large")),
            other => Err(args.wrong(&other, "a number")),
        },
        B::Modulo => {
            let (Some(dividend), Some(divisor)) =
                (args.number_or_null(0)?, args.number_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            if divisor.is_zero() {
                return Err(format!("{name}(): division by zero"));
            }
            // The result takes the divisor's sign: modulo(-5, 3) = 1.
            let remainder = dividend
                .checked_rem(divisor)
                .ok_or_else(|| format!("{name}(): the result is too large"))?;
            let adjusted = if !remainder.is_zero()
                && (remainder.is_sign_negative() != divisor.is_sign_negative())
            {
                remainder + divisor
            } else {
                remainder
            };
            Ok(Value::Number(adjusted))
        }
        B::Sqrt | B::Log | B::Exp => {
            let Some(n) = args.number_or_null(0)? else {
                return Ok(Value::Null);
            };
            let float = n.to_f64().unwrap_or(f64::NAN);
            let result = match builtin {
                B::Sqrt if n.is_sign_negative() && !n.is_zero() => {
                    return Err(format!("{name}(): {} is negative", n.normalize()));
                }
                B::Log if n <= Decimal::ZERO => {
                    return Err(format!("{name}(): {} is not positive", n.normalize()));
                }
                B::Sqrt => float.sqrt(),
                B::Log => float.ln(),
                _ => float.exp(),
            };
            value::decimal_from_f64(result)
                .map(|d| Value::Number(d.normalize()))
                .ok_or_else(|| format!("{name}(): the result is out of range"))
        }
        B::Odd | B::Even => {
            let Some(n) = args.number_or_null(0)? else {
                return Ok(Value::Null);
            };
            if !n.fract().is_zero() {
                return Err(format!("{name}(): {} is not an integer", n.normalize()));
            }
            let is_even = (n % Decimal::TWO).is_zero();
            Ok(Value::Bool(is_even == (builtin == B::Even)))
        }
        other => Err(misrouted(other)),
    }
}

fn round(args: &mut Arguments, strategy: RoundingStrategy, scale_required: bool) -> Outcome {
    let name = args.name;
    let Some(n) = args.number_or_null(0)? else {
        return Ok(Value::Null);
    };
    let scale = if scale_required || args.args.len() > 1 {
        match args.take(1) {
            Value::Null => return Ok(Value::Null),
            Value::Number(scale) => integer(scale).ok_or_else(|| {
                format!(
                    "{name}() expects an integer scale, but got {}",
                    scale.normalize()
                )
            })?,
            other => return Err(args.wrong(&other, "an integer scale")),
        }
    } else {
        0
    };
    if scale < 0 {
        return Err(format!("{name}(): the scale {scale} is negative"));
    }
    // A decimal holds at most 28 fractional digits; a larger scale changes nothing.
    let scale = u32::try_from(scale.min(28)).unwrap_or(28);
    Ok(Value::Number(n.round_dp_with_strategy(scale, strategy)))
}
