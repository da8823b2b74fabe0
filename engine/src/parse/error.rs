//! Deploy-time problems: each names the resource, the element and the line where
//! known, and says what to change.

use std::fmt;

use super::MAX_PROBLEMS;

/// One reason a resource cannot be deployed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub resource_name: String,
    /// The BPMN element the problem is about, when there is one.
    pub element_id: Option<String>,
    /// 1-based line in the resource, when known.
    pub line: Option<u32>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut place = Vec::new();
        if !self.resource_name.is_empty() {
            place.push(format!("'{}'", self.resource_name));
        }
        if let Some(line) = self.line {
            place.push(format!("line {line}"));
        }
        if let Some(id) = &self.element_id {
            place.push(format!("element '{id}'"));
        }
        if place.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", place.join(" "), self.message)
        }
    }
}

/// Why a deployment was rejected: every problem found, in resource order and, within
/// a resource, by line. Nothing of the deployment is deployed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeployError {
    /// At most [`MAX_PROBLEMS`]; `omitted` counts the rest.
    pub problems: Vec<Problem>,
    pub omitted: usize,
}

impl DeployError {
    pub(crate) fn push(&mut self, problem: Problem) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        } else {
            self.omitted += 1;
        }
    }

    pub(crate) fn absorb(&mut self, other: DeployError) {
        for problem in other.problems {
            self.push(problem);
        }
        self.omitted += other.omitted;
    }

    /// Whether some problem's message contains `fragment` (for tests and callers that
    /// branch on a kind of problem).
    pub fn mentions(&self, fragment: &str) -> bool {
        self.problems.iter().any(|p| p.message.contains(fragment))
    }
}

impl fmt::Display for DeployError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.problems.len() + self.omitted;
        let noun = if total == 1 { "problem" } else { "problems" };
        write!(f, "deployment rejected, {total} {noun}:")?;
        for problem in &self.problems {
            write!(f, "\n- {problem}")?;
        }
        if self.omitted > 0 {
            write!(f, "\n- ... and {} more", self.omitted)?;
        }
        Ok(())
    }
}

impl std::error::Error for DeployError {}

/// Collects the problems of one resource while it is parsed.
pub(super) struct Problems {
    resource_name: String,
    found: Vec<Problem>,
    omitted: usize,
}

impl Problems {
    pub(super) fn new(resource_name: &str) -> Problems {
        Problems {
            resource_name: resource_name.to_owned(),
            found: Vec::new(),
            omitted: 0,
        }
    }

    pub(super) fn add(&mut self, element_id: Option<&str>, line: Option<u32>, message: String) {
        if self.found.len() >= MAX_PROBLEMS {
            self.omitted += 1;
            return;
        }
        self.found.push(Problem {
            resource_name: self.resource_name.clone(),
            element_id: element_id.map(str::to_owned),
            line,
            message,
        });
    }

    /// Problems found so far, kept or not.
    pub(super) fn count(&self) -> usize {
        self.found.len() + self.omitted
    }

    pub(super) fn is_empty(&self) -> bool {
        self.found.is_empty() && self.omitted == 0
    }

    pub(super) fn into_result<T>(mut self, value: T) -> Result<T, DeployError> {
        if self.is_empty() {
            return Ok(value);
        }
        // Stable: problems on one line keep the order they were found in.
        self.found.sort_by_key(|p| p.line.unwrap_or(u32::MAX));
        Err(DeployError {
            problems: self.found,
            omitted: self.omitted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(resource: &str, id: Option<&str>, line: Option<u32>) -> Problem {
        Problem {
            resource_name: resource.to_owned(),
            element_id: id.map(str::to_owned),
            line,
            message: "it is wrong".to_owned(),
        }
    }

    #[test]
    fn a_problem_names_what_is_known_of_its_place() {
        let full = problem("a.bpmn", Some("Task_1"), Some(7));
        assert_eq!(
            full.to_string(),
            "'a.bpmn' line 7 element 'Task_1': it is wrong"
        );
        assert_eq!(
            problem("a.bpmn", None, None).to_string(),
            "'a.bpmn': it is wrong"
        );
        assert_eq!(problem("", None, None).to_string(), "it is wrong");
    }

    #[test]
    fn problems_sort_by_line_and_keep_their_order_on_one_line() {
        let mut problems = Problems::new("a.bpmn");
        problems.add(Some("late"), Some(9), "third".to_owned());
        problems.add(None, None, "last".to_owned());
        problems.add(Some("x"), Some(2), "first".to_owned());
        problems.add(Some("y"), Some(2), "second".to_owned());
        let error = problems.into_result(()).expect_err("problems were added");
        let order: Vec<&str> = error.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(order, ["first", "second", "third", "last"]);
        assert_eq!(Problems::new("b.bpmn").into_result(5), Ok(5));
    }
}
