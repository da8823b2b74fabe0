//! DMN 1.3 XML, as Camunda Modeler 5 writes it, to [`DecisionRequirements`]. DMNDI
//! (diagram layout) is skipped. Every FEEL text is compiled here, so a broken table is
//! refused at deploy with the decision, the rule and the column. What Rill does not
//! run (business knowledge models, decision services, boxed contexts…) is refused too.

use std::collections::HashMap;

use rill_feel::{Expression, UnaryTests};
use roxmltree::{Node, ParsingOptions};
use serde_json::{Map, Value as Json};

use super::model::{
    Aggregation, Decision, DecisionLogic, DecisionRequirements, DecisionTable, HitPolicy,
    ResultType, Rule, TableInput, TableOutput,
};
use crate::parse::{DeployError, MAX_RESOURCE_BYTES, MAX_XML_NODES, Problem};

/// The DMN model namespaces Modeler writes (1.3) or wrote (1.1, 1.2).
const DMN_NAMESPACES: [&str; 3] = [
    "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "http://www.omg.org/spec/DMN/20180521/MODEL/",
    "http://www.omg.org/spec/DMN/20151101/dmn.xsd",
];
const ZEEBE_NS: &str = "http://camunda.org/schema/zeebe/1.0";
const CAMUNDA_NS: &str = "http://camunda.org/schema/1.0/dmn";

/// Most decisions in one resource.
pub const MAX_DECISIONS: usize = 1_000;

/// Parses one `.dmn` resource.
pub fn parse_dmn(resource_name: &str, xml: &[u8]) -> Result<DecisionRequirements, DeployError> {
    let mut problems = Problems {
        resource_name,
        lines: Vec::new(),
        found: Vec::new(),
    };
    let parsed = parse_document(xml, &mut problems);
    match parsed {
        Some(drg) if problems.found.is_empty() => Ok(drg),
        _ => Err(problems.into_error()),
    }
}

struct Problems<'a> {
    resource_name: &'a str,
    /// Offsets of the newlines, for line numbers.
    lines: Vec<usize>,
    found: Vec<Problem>,
}

impl Problems<'_> {
    fn add(&mut self, node: Option<Node<'_, '_>>, decision: Option<&str>, message: String) {
        let line = node.map(|node| {
            let offset = node.range().start;
            let line = self.lines.partition_point(|&newline| newline < offset) + 1;
            u32::try_from(line).unwrap_or(u32::MAX)
        });
        self.found.push(Problem {
            resource_name: self.resource_name.to_owned(),
            element_id: decision.map(str::to_owned),
            line,
            message,
        });
    }

    fn into_error(self) -> DeployError {
        let mut error = DeployError::default();
        let resource_name = self.resource_name.to_owned();
        for problem in self.found {
            error.push(problem);
        }
        if error.problems.is_empty() {
            error.push(Problem {
                resource_name,
                element_id: None,
                line: None,
                message: "the resource is not a DMN model".to_owned(),
            });
        }
        error
    }
}

fn is_dmn(node: Node<'_, '_>) -> bool {
    node.is_element()
        && node
            .tag_name()
            .namespace()
            .is_some_and(|ns| DMN_NAMESPACES.contains(&ns))
}

fn dmn_children<'a, 'input>(node: Node<'a, 'input>) -> impl Iterator<Item = Node<'a, 'input>> {
    node.children().filter(|child| is_dmn(*child))
}

fn dmn_child<'a, 'input>(node: Node<'a, 'input>, name: &str) -> Option<Node<'a, 'input>> {
    dmn_children(node).find(|child| child.tag_name().name() == name)
}

/// The text of the `text` child (trimmed), or `None` without one.
fn text_child(node: Node<'_, '_>) -> Option<String> {
    dmn_child(node, "text").map(|text| {
        text.descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .collect::<String>()
            .trim()
            .to_owned()
    })
}

fn parse_document(xml: &[u8], problems: &mut Problems<'_>) -> Option<DecisionRequirements> {
    if xml.len() > MAX_RESOURCE_BYTES {
        problems.add(
            None,
            None,
            format!(
                "the resource is {} bytes, more than the limit of {MAX_RESOURCE_BYTES}",
                xml.len()
            ),
        );
        return None;
    }
    let Ok(text) = std::str::from_utf8(xml) else {
        problems.add(None, None, "the resource is not UTF-8 text".to_owned());
        return None;
    };
    problems.lines = text
        .bytes()
        .enumerate()
        .filter_map(|(offset, byte)| (byte == b'\n').then_some(offset))
        .collect();
    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_XML_NODES,
        ..ParsingOptions::default()
    };
    let document = match roxmltree::Document::parse_with_options(text, options) {
        Ok(document) => document,
        Err(error) => {
            problems.add(
                None,
                None,
                format!("the resource is not valid XML: {error}"),
            );
            return None;
        }
    };
    let root = document.root_element();
    if !is_dmn(root) || root.tag_name().name() != "definitions" {
        problems.add(
            Some(root),
            None,
            format!(
                "expected a DMN 1.3 'definitions' root element (namespace {}), found '{}'",
                DMN_NAMESPACES[0],
                root.tag_name().name()
            ),
        );
        return None;
    }
    let id = root.attribute("id").unwrap_or_default().to_owned();
    if id.is_empty() {
        problems.add(
            Some(root),
            None,
            "the 'definitions' element has no id (the decision requirements id)".to_owned(),
        );
    }
    let name = root
        .attribute("name")
        .filter(|name| !name.is_empty())
        .unwrap_or(&id)
        .to_owned();
    let namespace = root.attribute("namespace").unwrap_or_default().to_owned();

    let mut decision_nodes = Vec::new();
    for child in dmn_children(root) {
        match child.tag_name().name() {
            "decision" => decision_nodes.push(child),
            // Documentation of the graph: inputs are read from variables by name.
            "inputData" | "knowledgeSource" | "textAnnotation" | "association" => {}
            other => problems.add(
                Some(child),
                child.attribute("id"),
                format!(
                    "'{other}' elements are not supported; Rill evaluates decision tables and \
                     literal expressions"
                ),
            ),
        }
    }
    if decision_nodes.is_empty() {
        problems.add(Some(root), None, "the model has no decision".to_owned());
        return None;
    }
    if decision_nodes.len() > MAX_DECISIONS {
        problems.add(
            Some(root),
            None,
            format!(
                "the model has {} decisions, more than the limit of {MAX_DECISIONS}",
                decision_nodes.len()
            ),
        );
        return None;
    }

    let mut index_by_id: HashMap<&str, usize> = HashMap::new();
    for (index, node) in decision_nodes.iter().enumerate() {
        let decision_id = node.attribute("id").unwrap_or_default();
        if decision_id.is_empty() {
            problems.add(Some(*node), None, "a decision has no id".to_owned());
        } else if index_by_id.insert(decision_id, index).is_some() {
            problems.add(
                Some(*node),
                Some(decision_id),
                format!("the decision id '{decision_id}' is used more than once"),
            );
        }
    }

    let mut decisions = Vec::new();
    for node in &decision_nodes {
        if let Some(decision) = parse_decision(*node, &index_by_id, problems) {
            decisions.push(decision);
        }
    }
    if decisions.len() != decision_nodes.len() {
        return None;
    }
    check_acyclic(&decisions, &decision_nodes, problems);
    Some(DecisionRequirements {
        id,
        name,
        namespace,
        decisions,
    })
}

fn parse_decision(
    node: Node<'_, '_>,
    index_by_id: &HashMap<&str, usize>,
    problems: &mut Problems<'_>,
) -> Option<Decision> {
    let id = node.attribute("id").unwrap_or_default().to_owned();
    let name = node
        .attribute("name")
        .filter(|name| !name.is_empty())
        .unwrap_or(&id)
        .to_owned();
    let version_tag = node
        .attribute((ZEEBE_NS, "versionTag"))
        .or_else(|| node.attribute((CAMUNDA_NS, "versionTag")))
        .filter(|tag| !tag.is_empty())
        .map(str::to_owned);
    let before = problems.found.len();
    let mut required = Vec::new();
    let mut logic = None;
    let mut result_type = None;
    for child in dmn_children(node) {
        match child.tag_name().name() {
            "variable" => result_type = parse_result_type(child, &id, problems),
            "informationRequirement" => {
                if let Some(requirement) = dmn_child(child, "requiredDecision") {
                    let href = requirement.attribute("href").unwrap_or_default();
                    let target = href.strip_prefix('#').unwrap_or(href);
                    match index_by_id.get(target) {
                        Some(index) => required.push(*index),
                        None => problems.add(
                            Some(requirement),
                            Some(&id),
                            format!(
                                "the required decision '{href}' is not a decision of this model"
                            ),
                        ),
                    }
                }
            }
            "description" | "authorityRequirement" | "extensionElements" => {}
            "decisionTable" => logic = parse_table(child, &id, problems).map(DecisionLogic::Table),
            "literalExpression" => {
                let text = text_child(child).unwrap_or_default();
                logic = compile_expression(&text, child, &id, "the literal expression", problems)
                    .map(|expression| DecisionLogic::Literal { expression });
            }
            other => problems.add(
                Some(child),
                Some(&id),
                format!(
                    "'{other}' is not supported in a decision; Rill evaluates decision tables \
                     and literal expressions"
                ),
            ),
        }
    }
    if logic.is_none() && problems.found.len() == before {
        problems.add(
            Some(node),
            Some(&id),
            "the decision has neither a decision table nor a literal expression".to_owned(),
        );
    }
    required.sort_unstable();
    required.dedup();
    Some(Decision {
        id,
        name,
        version_tag,
        required,
        logic: logic?,
        result_type,
    })
}

/// The `typeRef` of a decision's `variable`, the type its result must have. Zeebe's DMN
/// engine checks the FEEL types (with or without a `feel:` prefix) and ignores others;
/// Rill checks string, number and boolean, and refuses the temporal ones: its results
/// are JSON, where a date and a string look alike.
fn parse_result_type(
    variable: Node<'_, '_>,
    decision_id: &str,
    problems: &mut Problems<'_>,
) -> Option<ResultType> {
    let raw = variable.attribute("typeRef")?;
    let name = raw.strip_prefix("feel:").unwrap_or(raw);
    match name {
        "string" => Some(ResultType::String),
        "number" => Some(ResultType::Number),
        "boolean" => Some(ResultType::Boolean),
        "date" | "time" | "dateTime" | "dayTimeDuration" | "yearMonthDuration" => {
            problems.add(
                Some(variable),
                Some(decision_id),
                format!(
                    "the decision's result typeRef '{raw}' is not supported: Zeebe checks that \
                     the result is a {name}, and Rill cannot tell a {name} from a string in a \
                     result; remove the typeRef or use 'string'"
                ),
            );
            None
        }
        _ => None,
    }
}

fn compile_expression(
    text: &str,
    node: Node<'_, '_>,
    decision_id: &str,
    what: &str,
    problems: &mut Problems<'_>,
) -> Option<Expression> {
    match Expression::compile(text) {
        Ok(expression) => Some(expression),
        Err(error) => {
            problems.add(Some(node), Some(decision_id), format!("{what}: {error}"));
            None
        }
    }
}

fn parse_hit_policy(
    table: Node<'_, '_>,
    decision_id: &str,
    problems: &mut Problems<'_>,
) -> Option<HitPolicy> {
    let aggregation = match table.attribute("aggregation") {
        None => None,
        Some("SUM") => Some(Aggregation::Sum),
        Some("MIN") => Some(Aggregation::Min),
        Some("MAX") => Some(Aggregation::Max),
        Some("COUNT") => Some(Aggregation::Count),
        Some(other) => {
            problems.add(
                Some(table),
                Some(decision_id),
                format!("unknown aggregation '{other}'; expected SUM, MIN, MAX or COUNT"),
            );
            return None;
        }
    };
    let policy = match table.attribute("hitPolicy").unwrap_or("UNIQUE") {
        "UNIQUE" => HitPolicy::Unique,
        "FIRST" => HitPolicy::First,
        "PRIORITY" => HitPolicy::Priority,
        "ANY" => HitPolicy::Any,
        "RULE ORDER" => HitPolicy::RuleOrder,
        "OUTPUT ORDER" => HitPolicy::OutputOrder,
        "COLLECT" => HitPolicy::Collect(aggregation),
        other => {
            problems.add(
                Some(table),
                Some(decision_id),
                format!(
                    "unknown hit policy '{other}'; expected UNIQUE, FIRST, PRIORITY, ANY, \
                     RULE ORDER, OUTPUT ORDER or COLLECT"
                ),
            );
            return None;
        }
    };
    if aggregation.is_some() && !matches!(policy, HitPolicy::Collect(_)) {
        problems.add(
            Some(table),
            Some(decision_id),
            "an aggregation is only allowed with the COLLECT hit policy".to_owned(),
        );
        return None;
    }
    Some(policy)
}

fn parse_table(
    table: Node<'_, '_>,
    decision_id: &str,
    problems: &mut Problems<'_>,
) -> Option<DecisionTable> {
    let before = problems.found.len();
    let hit_policy = parse_hit_policy(table, decision_id, problems);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut rule_nodes = Vec::new();
    for child in dmn_children(table) {
        match child.tag_name().name() {
            "input" => {
                let column = inputs.len() + 1;
                let id = child.attribute("id").unwrap_or_default().to_owned();
                let text = dmn_child(child, "inputExpression")
                    .and_then(text_child)
                    .unwrap_or_default();
                let what = format!("input column '{id}' (column {column}): its input expression");
                let name = child
                    .attribute("label")
                    .filter(|label| !label.is_empty())
                    .unwrap_or(&text)
                    .to_owned();
                if let Some(expression) =
                    compile_expression(&text, child, decision_id, &what, problems)
                {
                    inputs.push(TableInput {
                        id,
                        name,
                        expression,
                    });
                }
            }
            "output" => {
                let column = outputs.len() + 1;
                let id = child.attribute("id").unwrap_or_default().to_owned();
                let values = match dmn_child(child, "outputValues").and_then(text_child) {
                    Some(text) if !text.is_empty() => {
                        output_values(&text).unwrap_or_else(|reason| {
                            problems.add(
                                Some(child),
                                Some(decision_id),
                                format!(
                                    "output column '{id}' (column {column}): its output values \
                                     '{text}' {reason}"
                                ),
                            );
                            Vec::new()
                        })
                    }
                    _ => Vec::new(),
                };
                outputs.push(TableOutput {
                    id,
                    name: child.attribute("name").unwrap_or_default().to_owned(),
                    values,
                });
            }
            "rule" => rule_nodes.push(child),
            // Rule annotations: documentation.
            "annotation" | "description" | "extensionElements" => {}
            other => problems.add(
                Some(child),
                Some(decision_id),
                format!("'{other}' is not supported in a decision table"),
            ),
        }
    }
    if outputs.is_empty() {
        problems.add(
            Some(table),
            Some(decision_id),
            "the decision table has no output".to_owned(),
        );
    }
    if outputs.len() > 1 {
        for (column, output) in outputs.iter().enumerate() {
            if output.name.is_empty() {
                problems.add(
                    Some(table),
                    Some(decision_id),
                    format!(
                        "output column '{}' (column {}) has no name; a table with several \
                         outputs needs one per output",
                        output.id,
                        column + 1
                    ),
                );
            }
        }
    }
    let aggregate = match hit_policy {
        Some(HitPolicy::Collect(Some(aggregation))) => {
            if outputs.len() > 1 {
                problems.add(
                    Some(table),
                    Some(decision_id),
                    "COLLECT with an aggregation needs exactly one output".to_owned(),
                );
            }
            match aggregation {
                Aggregation::Sum => Expression::compile("sum(values)").ok(),
                Aggregation::Min => Expression::compile("min(values)").ok(),
                Aggregation::Max => Expression::compile("max(values)").ok(),
                Aggregation::Count => None,
            }
        }
        _ => None,
    };

    let mut rules = Vec::new();
    for (position, node) in rule_nodes.iter().enumerate() {
        let index = position + 1;
        let rule_id = node.attribute("id").unwrap_or_default().to_owned();
        let rule_name = format!("rule '{rule_id}' (rule {index})");
        let input_nodes: Vec<_> = dmn_children(*node)
            .filter(|n| n.tag_name().name() == "inputEntry")
            .collect();
        let output_nodes: Vec<_> = dmn_children(*node)
            .filter(|n| n.tag_name().name() == "outputEntry")
            .collect();
        if input_nodes.len() != inputs.len() || output_nodes.len() != outputs.len() {
            problems.add(
                Some(*node),
                Some(decision_id),
                format!(
                    "{rule_name} has {} input entries and {} output entries, but the table has \
                     {} inputs and {} outputs",
                    input_nodes.len(),
                    output_nodes.len(),
                    inputs.len(),
                    outputs.len()
                ),
            );
            continue;
        }
        let mut input_entries = Vec::new();
        for (column, entry) in input_nodes.iter().enumerate() {
            let text = text_child(*entry).unwrap_or_default();
            // Modeler writes an empty cell for "any input".
            let source = if text.is_empty() { "-" } else { text.as_str() };
            match UnaryTests::compile(source) {
                Ok(tests) => input_entries.push(tests),
                Err(error) => problems.add(
                    Some(*entry),
                    Some(decision_id),
                    format!(
                        "{rule_name}, input column '{}' (column {}): {error}",
                        inputs.get(column).map_or("", |input| input.id.as_str()),
                        column + 1
                    ),
                ),
            }
        }
        let mut output_entries = Vec::new();
        for (column, entry) in output_nodes.iter().enumerate() {
            let text = text_child(*entry).unwrap_or_default();
            if text.is_empty() {
                output_entries.push(None);
                continue;
            }
            let what = format!(
                "{rule_name}, output column '{}' (column {})",
                outputs[column].id,
                column + 1
            );
            output_entries.push(compile_expression(
                &text,
                *entry,
                decision_id,
                &what,
                problems,
            ));
        }
        rules.push(Rule {
            id: rule_id,
            index,
            input_entries,
            output_entries,
        });
    }
    if problems.found.len() != before {
        return None;
    }
    Some(DecisionTable {
        hit_policy: hit_policy?,
        inputs,
        outputs,
        rules,
        aggregate,
    })
}

/// `"a", "b", 3` → the literal values in order (constants only: they rank outputs).
fn output_values(text: &str) -> Result<Vec<Json>, String> {
    let list = Expression::compile(&format!("[{text}]"))
        .map_err(|e| format!("are not a comma-separated list of values: {}", e.reason()))?;
    if !list.variable_names().is_empty() {
        return Err("must be constants, not variables".to_owned());
    }
    match list.evaluate(&Map::new(), 0) {
        Ok(Json::Array(values)) => Ok(values),
        Ok(_) => Err("are not a list of values".to_owned()),
        Err(e) => Err(format!("cannot be evaluated: {}", e.reason())),
    }
}

/// Refuses a graph in which a decision (indirectly) requires itself.
fn check_acyclic(decisions: &[Decision], nodes: &[Node<'_, '_>], problems: &mut Problems<'_>) {
    // 0 unvisited, 1 on the current path, 2 done.
    let mut marks = vec![0u8; decisions.len()];
    for start in 0..decisions.len() {
        if marks[start] != 0 {
            continue;
        }
        // Depth-first with an explicit stack of (decision, next requirement to visit).
        let mut stack = vec![(start, 0usize)];
        marks[start] = 1;
        while let Some((current, next)) = stack.last_mut() {
            let current = *current;
            if let Some(&required) = decisions[current].required.get(*next) {
                *next += 1;
                match marks[required] {
                    0 => {
                        marks[required] = 1;
                        stack.push((required, 0));
                    }
                    1 => {
                        problems.add(
                            Some(nodes[current]),
                            Some(&decisions[current].id),
                            format!(
                                "the decision requires '{}', which requires it in turn; the \
                                 requirements must not form a cycle",
                                decisions[required].id
                            ),
                        );
                        return;
                    }
                    _ => {}
                }
            } else {
                marks[current] = 2;
                stack.pop();
            }
        }
    }
}
