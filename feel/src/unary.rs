//! Unary tests: the input entries of a DMN decision table (`< 5, [10..20]`, `"gold"`,
//! `not("a", "b")`, `-`), compiled once and checked against an input value.

use serde_json::{Map, Value as Json};

use crate::ast::{self, UnaryTest};
use crate::value::{self, Value};
use crate::{Environment, FeelError, eval, parser};

/// An input value converted once, to be checked against many unary tests.
#[derive(Debug, Clone)]
pub struct TestInput(pub(crate) Value);

impl TestInput {
    /// Converts a JSON value (the result of the input expression).
    pub fn from_json(json: &Json) -> Result<TestInput, FeelError> {
        value::from_json(json)
            .map(TestInput)
            .map_err(|reason| FeelError::Evaluation {
                source_text: String::new(),
                reason,
            })
    }
}

/// Compiled unary tests. Cheap to share: no per-evaluation state.
#[derive(Clone)]
pub struct UnaryTests {
    source: String,
    /// `None` is `-`: every input matches.
    tests: Option<CompiledTests>,
    variable_names: Vec<String>,
}

#[derive(Clone)]
struct CompiledTests {
    negated: bool,
    /// Each test, with whether it reads the input as `?`.
    tests: Vec<(UnaryTest, bool)>,
}

impl UnaryTests {
    /// Compiles the text of an input entry. An empty text is an error (Modeler writes
    /// `-` for "any").
    pub fn compile(source: &str) -> Result<UnaryTests, FeelError> {
        let syntax_error = |reason| FeelError::Syntax {
            source_text: source.to_owned(),
            reason,
        };
        let parsed = parser::parse_unary_tests(source).map_err(syntax_error)?;
        let mut variable_names = Vec::new();
        let tests = parsed.map(|(negated, tests)| {
            let tests = tests
                .into_iter()
                .map(|test| {
                    let mut names = Vec::new();
                    match &test {
                        UnaryTest::Compare(_, operand) | UnaryTest::Value(operand) => {
                            ast::free_names(operand, &mut Vec::new(), &mut names)
                        }
                    }
                    let reads_input = names.iter().any(|name| name == "?");
                    variable_names.extend(names.into_iter().filter(|name| name != "?"));
                    (test, reads_input)
                })
                .collect();
            CompiledTests { negated, tests }
        });
        variable_names.sort();
        variable_names.dedup();
        Ok(UnaryTests {
            source: source.to_owned(),
            tests,
            variable_names,
        })
    }

    /// The text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether this is `-`, which every input passes.
    pub fn is_any(&self) -> bool {
        self.tests.is_none()
    }

    /// Variables the tests read besides the input, sorted and de-duplicated.
    pub fn variable_names(&self) -> &[String] {
        &self.variable_names
    }

    /// Whether `input` passes: any one of the tests (none of them under `not(…)`).
    /// A test that cannot be evaluated (`"a" < 5`) is an error.
    pub fn matches(
        &self,
        input: &TestInput,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<bool, FeelError> {
        let Some(compiled) = &self.tests else {
            return Ok(true);
        };
        let mut evaluator = eval::Evaluator::new(variables, environment.into());
        evaluator.bind_input(input.0.clone());
        let mut passed = false;
        for (test, reads_input) in &compiled.tests {
            let result = evaluator
                .input_entry_test(&input.0, test, *reads_input)
                .map_err(|reason| FeelError::Evaluation {
                    source_text: self.source.clone(),
                    reason,
                })?;
            if result {
                passed = true;
                break;
            }
        }
        Ok(passed != compiled.negated)
    }
}

impl std::fmt::Debug for UnaryTests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UnaryTests({:?})", self.source)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(tests: &str, input: Json) -> bool {
        let variables = json!({"limit": 10, "names": ["a", "b"]});
        let compiled = UnaryTests::compile(tests).unwrap();
        let input = TestInput::from_json(&input).unwrap();
        compiled
            .matches(&input, variables.as_object().unwrap(), 0)
            .unwrap()
    }

    #[test]
    fn input_entries_as_decision_tables_hold_them() {
        assert!(check("-", json!(null)));
        assert!(check("\"gold\"", json!("gold")));
        assert!(!check("\"gold\"", json!("silver")));
        assert!(check("\"gold\", \"silver\"", json!("silver")));
        assert!(check("< 5", json!(4)));
        assert!(!check("< 5", json!(5)));
        assert!(check(">= limit", json!(10)));
        assert!(check("[1..5]", json!(5)));
        assert!(!check("[1..5)", json!(5)));
        assert!(check("not(\"a\", \"b\")", json!("c")));
        assert!(!check("not(\"a\", \"b\")", json!("a")));
        assert!(check("? > 5 and ? < 8", json!(6)));
        assert!(!check("? > 5 and ? < 8", json!(9)));
        assert!(check("names", json!("b")));
        assert!(check("true", json!(true)));
        assert!(!check("false", json!(true)));
        assert!(check("null", json!(null)));
        assert!(!check("> 5", json!(null)));
        assert!(check("starts with(?, \"ab\")", json!("abc")));
    }

    #[test]
    fn bad_tests_are_rejected_or_fail() {
        assert!(UnaryTests::compile("").is_err());
        assert!(UnaryTests::compile("< ").is_err());
        assert!(UnaryTests::compile("\"a\",").is_err());
        let compiled = UnaryTests::compile("< 5").unwrap();
        let input = TestInput::from_json(&json!("text")).unwrap();
        assert!(compiled.matches(&input, &Map::new(), 0).is_err());
        assert_eq!(
            UnaryTests::compile("> limit, [a..b]")
                .unwrap()
                .variable_names(),
            ["a", "b", "limit"]
        );
    }
}
