//! `for`, `some` and `every`: iterating over lists and ranges.

use super::{Evaluator, Local, MAX_STEPS, Outcome, integer, number, weight};
use crate::ast::Expr;
use crate::value::Value;

impl<'a> Evaluator<'a> {
    fn iteration_items(&mut self, source: &'a Expr) -> Result<Vec<Value>, String> {
        match self.eval(source)? {
            Value::List(items) => Ok(items),
            Value::Range(range) => {
                let (Value::Number(start), Value::Number(end)) = (&range.start, &range.end) else {
                    return Err(format!(
                        "can only iterate over a range of numbers, not {}..{}",
                        range.start.describe(),
                        range.end.describe()
                    ));
                };
                let (Some(start), Some(end)) = (integer(*start), integer(*end)) else {
                    return Err("can only iterate over a range of integers".to_owned());
                };
                let count = start.abs_diff(end).saturating_add(1);
                if count > MAX_STEPS {
                    return Err(format!(
                        "the range {start}..{end} has more than {MAX_STEPS} items"
                    ));
                }
                let step: i64 = if end >= start { 1 } else { -1 };
                let mut items = Vec::new();
                let mut current = start;
                loop {
                    self.step()?;
                    items.push(number(current));
                    if current == end {
                        break;
                    }
                    current += step;
                }
                Ok(items)
            }
            Value::Null => Err("can't iterate over null".to_owned()),
            other => Ok(vec![other]),
        }
    }

    pub(super) fn for_loop(
        &mut self,
        bindings: &'a [(String, Expr)],
        body: &'a Expr,
        results: &mut Vec<Value>,
    ) -> Result<(), String> {
        let Some(((name, source), rest)) = bindings.split_first() else {
            self.step()?;
            let result = self.eval(body)?;
            self.charge(weight(&result))?;
            results.push(result);
            return Ok(());
        };
        let items = self.iteration_items(source)?;
        for item in items {
            self.locals.push(Local::Named(name, item));
            let result = self.for_loop(rest, body, results);
            self.locals.pop();
            result?;
        }
        Ok(())
    }

    pub(super) fn quantified(
        &mut self,
        every: bool,
        bindings: &'a [(String, Expr)],
        condition: &'a Expr,
    ) -> Outcome {
        let Some(((name, source), rest)) = bindings.split_first() else {
            self.step()?;
            return Ok(Value::Bool(self.eval(condition)? == Value::Bool(true)));
        };
        let items = self.iteration_items(source)?;
        for item in items {
            self.locals.push(Local::Named(name, item));
            let result = self.quantified(every, rest, condition);
            self.locals.pop();
            let satisfied = result? == Value::Bool(true);
            if satisfied != every {
                return Ok(Value::Bool(satisfied));
            }
        }
        Ok(Value::Bool(every))
    }
}
