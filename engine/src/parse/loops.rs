//! Straight-through processing loops, refused at deploy as Zeebe refuses them: a cycle
//! of elements that pass a token on at once, with nothing to wait for, would keep one
//! command busy without end.
//!
//! Zeebe's rule (its `StraightThroughProcessingLoopValidator`, Zeebe 8.8 with its
//! patches for script tasks and link events, and decision business rule tasks as in
//! Zeebe's current rule), which this module follows:
//!
//! - elements that pass a token on: undefined and manual tasks, script tasks with a
//!   `zeebe:script` expression, business rule tasks with a `zeebe:calledDecision`, call
//!   activities, intermediate throw events (every kind), exclusive, parallel and
//!   inclusive gateways, start and end events (every kind), embedded subprocesses and
//!   link catch events. Everything else stops a loop: job-based tasks, receive and user
//!   tasks, catch events, event-based gateways, boundary events, event and ad-hoc
//!   subprocesses;
//! - a token moves over the outgoing flows; from an element without any, on over the
//!   outgoing flows of its subprocess (an end, implicit or not, completes it); from an
//!   embedded subprocess into its none start event; from a call activity into the none
//!   start event of the called process when its id is static and that process is in the
//!   same resource (nothing else: a call activity's own outgoing flows are not
//!   followed); from a link throw event to its catch event;
//! - a cycle is refused when it can be reached from one of the kinds Zeebe refuses
//!   loops of (tasks of the kinds above, call activities, intermediate throw events), so
//!   a cycle of gateways alone that no such task leads into deploys.
//!
//! Loops Zeebe does not see (e.g. through a call activity whose process is in another
//! resource, or a called element given by an expression) are left to the bound on one
//! command's work. Zeebe walks every path from every such element; here the cycles are
//! the strongly connected components of that graph (Tarjan, without recursion), so the
//! check is linear in the size of the model. One loop is reported per component, the
//! shortest one through its first task in document order, naming its elements in order.

use std::collections::VecDeque;

use super::error::Problems;
use crate::model::{
    BusinessRuleDefinition, CatchEventDefinition, ElementIdx, ElementKind, ProcessModel,
    ScriptDefinition, ThrowEventDefinition, ValueOrExpr,
};

/// How an element takes part in a straight-through loop.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Waits for something outside the engine, or is not one Zeebe checks: no
    /// straight-through loop goes through it.
    Stops,
    /// Passes the token on at once (gateways, events, subprocess boundaries).
    PassesOn,
    /// Passes the token on at once and is a kind Zeebe refuses loops of.
    Counts,
}

fn role(kind: &ElementKind) -> Role {
    match kind {
        ElementKind::Task
        | ElementKind::ManualTask
        | ElementKind::CallActivity(_)
        | ElementKind::IntermediateThrowEvent(_)
        | ElementKind::ScriptTask(ScriptDefinition::Expression { .. })
        | ElementKind::BusinessRuleTask(BusinessRuleDefinition::Decision { .. }) => Role::Counts,
        ElementKind::ExclusiveGateway { .. }
        | ElementKind::ParallelGateway
        | ElementKind::InclusiveGateway { .. }
        | ElementKind::StartEvent
        | ElementKind::TimerStartEvent(_)
        | ElementKind::MessageStartEvent { .. }
        | ElementKind::SignalStartEvent { .. }
        | ElementKind::EventStartEvent { .. }
        | ElementKind::EndEvent(_)
        | ElementKind::IntermediateCatchEvent(CatchEventDefinition::Link { .. })
        | ElementKind::SubProcess {
            triggered_by_event: false,
            ..
        } => Role::PassesOn,
        _ => Role::Stops,
    }
}

/// The elements of every process of one resource as one graph: node `offsets[m] + i` is
/// element `i` of model `m`.
struct Graph<'m> {
    models: &'m [ProcessModel],
    offsets: Vec<usize>,
    roles: Vec<Role>,
    /// Successors among the elements that do not stop a loop, in flow order.
    successors: Vec<Vec<u32>>,
}

impl<'m> Graph<'m> {
    fn new(models: &'m [ProcessModel]) -> Graph<'m> {
        let mut offsets = Vec::with_capacity(models.len());
        let mut roles = Vec::new();
        for model in models {
            offsets.push(roles.len());
            roles.extend(model.elements.iter().map(|e| role(&e.kind)));
        }
        let mut graph = Graph {
            models,
            offsets,
            roles,
            successors: Vec::new(),
        };
        let mut successors = vec![Vec::new(); graph.roles.len()];
        for (m, model) in models.iter().enumerate() {
            for i in 0..model.elements.len() {
                let node = graph.offsets[m] + i;
                if graph.roles[node] == Role::Stops {
                    continue;
                }
                successors[node] = graph
                    .next_elements(m, ElementIdx(index_u32(i)))
                    .into_iter()
                    .filter(|&next| graph.roles[next as usize] != Role::Stops)
                    .collect();
            }
        }
        graph.successors = successors;
        graph
    }

    fn node(&self, model: usize, element: ElementIdx) -> u32 {
        index_u32(self.offsets[model] + element.0 as usize)
    }

    /// The model and element of a node.
    fn element(&self, node: u32) -> (usize, ElementIdx) {
        let node = node as usize;
        let model = self.offsets.partition_point(|&offset| offset <= node) - 1;
        (model, ElementIdx(index_u32(node - self.offsets[model])))
    }

    /// Where a token goes from an element that passes it on at once.
    fn next_elements(&self, m: usize, idx: ElementIdx) -> Vec<u32> {
        let model = &self.models[m];
        let element = model.element(idx);
        let targets = |outgoing: &[crate::model::FlowIdx]| -> Vec<u32> {
            outgoing
                .iter()
                .map(|&flow| self.node(m, model.flow(flow).target))
                .collect()
        };
        match &element.kind {
            // A subprocess or link without its other end (a problem reported already)
            // names itself: no way on.
            ElementKind::SubProcess { start_event, .. } if *start_event == idx => Vec::new(),
            ElementKind::SubProcess { start_event, .. } => vec![self.node(m, *start_event)],
            ElementKind::CallActivity(called) => match &called.process_id {
                ValueOrExpr::Static(process_id) => self
                    .models
                    .iter()
                    .position(|other| other.bpmn_process_id == *process_id)
                    .and_then(|c| {
                        let start = self.models[c].start_event(ProcessModel::ROOT)?;
                        Some(vec![self.node(c, start)])
                    })
                    .unwrap_or_default(),
                ValueOrExpr::Expr(_) => Vec::new(),
            },
            ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link {
                catch_event, ..
            }) if *catch_event == idx => Vec::new(),
            ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link {
                catch_event, ..
            }) => vec![self.node(m, *catch_event)],
            _ if !element.outgoing.is_empty() => targets(&element.outgoing),
            // An end (implicit or not) completes the subprocess, whose flows go on.
            _ => match element.flow_scope {
                Some(scope) => targets(&model.element(scope).outgoing),
                None => Vec::new(),
            },
        }
    }

    fn id(&self, node: u32, qualified: bool) -> String {
        let (m, idx) = self.element(node);
        let model = &self.models[m];
        let id = &model.element(idx).id;
        if qualified {
            format!("{}/{id}", model.bpmn_process_id)
        } else {
            id.clone()
        }
    }
}

/// Most elements of one loop named in its problem.
const MAX_NAMED: usize = 40;

fn index_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// Reports every straight-through processing loop among the processes of one resource
/// (complete or not: placeholders only ever point at their own element). `line_of`
/// finds the line of an element by its id.
pub(super) fn check(
    models: &[ProcessModel],
    mut line_of: impl FnMut(&str) -> Option<u32>,
    problems: &mut Problems,
) {
    let graph = Graph::new(models);
    let component = strongly_connected(&graph.successors);
    let reachable = reachable_from_counted(&graph);

    // Per component: whether it holds a cycle, whether a counted element reaches it, and
    // the node to start the reported loop from.
    let count = component.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    let mut has_cycle = vec![false; count];
    let mut reached = vec![false; count];
    let mut first_counted: Vec<Option<u32>> = vec![None; count];
    let mut first_node: Vec<Option<u32>> = vec![None; count];
    let mut size = vec![0usize; count];
    for node in 0..graph.roles.len() {
        if graph.roles[node] == Role::Stops {
            continue;
        }
        let c = component[node] as usize;
        size[c] += 1;
        reached[c] |= reachable[node];
        if graph.successors[node].contains(&index_u32(node)) {
            has_cycle[c] = true;
        }
        if graph.roles[node] == Role::Counts && first_counted[c].is_none() {
            first_counted[c] = Some(index_u32(node));
        }
        first_node[c].get_or_insert(index_u32(node));
    }
    // Components in document order of their first element.
    let mut reported: Vec<u32> = (0..count)
        .filter(|&c| (has_cycle[c] || size[c] > 1) && reached[c])
        .filter_map(|c| first_counted[c].or(first_node[c]))
        .collect();
    reported.sort_unstable();

    let mut finder = CycleFinder::new(&graph.successors, &component);
    for start in reported {
        let cycle = finder.shortest_cycle(start);
        let first_model = graph.element(start).0;
        let qualified = cycle.iter().any(|&n| graph.element(n).0 != first_model);
        let mut names: Vec<String> = cycle.iter().map(|&n| graph.id(n, qualified)).collect();
        if names.len() > MAX_NAMED {
            // A loop of thousands of elements: its two ends say where it is.
            let omitted = names.len() - MAX_NAMED;
            names.splice(
                MAX_NAMED / 2..names.len() - MAX_NAMED / 2,
                [format!("({omitted} more)")],
            );
        }
        let start_id = graph.id(start, false);
        problems.add(
            Some(&start_id),
            line_of(&start_id),
            format!(
                "processes are not allowed to contain a straight-through processing loop: {}. \
                 No element of the loop waits (for a job, a message, a timer, a signal or a \
                 user), so an instance would run around it without end; add a wait state to \
                 the loop (e.g. a service task, a user task or a timer catch event)",
                names.join(" > ")
            ),
        );
    }
}

/// Which nodes a token can reach, passing on at once, from an element of a kind Zeebe
/// refuses loops of (the elements themselves included).
fn reachable_from_counted(graph: &Graph<'_>) -> Vec<bool> {
    let mut reachable = vec![false; graph.roles.len()];
    let mut queue: VecDeque<u32> = VecDeque::new();
    for (node, role) in graph.roles.iter().enumerate() {
        if *role == Role::Counts {
            reachable[node] = true;
            queue.push_back(index_u32(node));
        }
    }
    while let Some(node) = queue.pop_front() {
        for &next in &graph.successors[node as usize] {
            if !std::mem::replace(&mut reachable[next as usize], true) {
                queue.push_back(next);
            }
        }
    }
    reachable
}

/// The strongly connected component of each node (Tarjan's algorithm with an explicit
/// stack, so a long chain of elements cannot overflow the thread's stack).
fn strongly_connected(successors: &[Vec<u32>]) -> Vec<u32> {
    const UNSEEN: u32 = u32::MAX;
    let n = successors.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNSEEN; n];
    let mut stack: Vec<u32> = Vec::new();
    // The depth-first path: a node and the position of its next successor to visit.
    let mut path: Vec<(u32, usize)> = Vec::new();
    let mut next_index = 0u32;
    let mut next_component = 0u32;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(index_u32(root));
        on_stack[root] = true;
        path.push((index_u32(root), 0));
        while let Some((node, position)) = path.last_mut() {
            let v = *node as usize;
            if let Some(&w) = successors[v].get(*position) {
                *position += 1;
                let w = w as usize;
                if index[w] == UNSEEN {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(index_u32(w));
                    on_stack[w] = true;
                    path.push((index_u32(w), 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            path.pop();
            if let Some((parent, _)) = path.last() {
                let p = *parent as usize;
                low[p] = low[p].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    component[w as usize] = next_component;
                    if w as usize == v {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

/// Finds the shortest cycle through a node, one component after the other, reusing its
/// buffers so that all components together take time linear in the graph's size.
struct CycleFinder<'g> {
    successors: &'g [Vec<u32>],
    component: &'g [u32],
    /// The node each visited node was reached from; reset after each search.
    parent: Vec<Option<u32>>,
    visited: Vec<u32>,
}

impl<'g> CycleFinder<'g> {
    fn new(successors: &'g [Vec<u32>], component: &'g [u32]) -> CycleFinder<'g> {
        CycleFinder {
            successors,
            component,
            parent: vec![None; successors.len()],
            visited: Vec::new(),
        }
    }

    /// The shortest cycle from `start` back to it within its component, following the
    /// successors in flow order; `start` is written at both ends.
    fn shortest_cycle(&mut self, start: u32) -> Vec<u32> {
        let own = self.component[start as usize];
        let mut queue = VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(node) = queue.pop_front() {
            for &next in &self.successors[node as usize] {
                if next == start {
                    last = Some(node);
                    break 'search;
                }
                if self.component[next as usize] == own && self.parent[next as usize].is_none() {
                    self.parent[next as usize] = Some(node);
                    self.visited.push(next);
                    queue.push_back(next);
                }
            }
        }
        // The way back from the last node to the start, reversed into flow order.
        let mut path = Vec::new();
        let mut at = last;
        while let Some(node) = at.filter(|&node| node != start) {
            path.push(node);
            at = self.parent[node as usize];
        }
        path.reverse();
        for node in self.visited.drain(..) {
            self.parent[node as usize] = None;
        }
        let mut cycle = Vec::with_capacity(path.len() + 2);
        cycle.push(start);
        cycle.extend(path);
        cycle.push(start);
        cycle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_of_a_chain_a_cycle_and_a_self_loop() {
        // 0 -> 1 -> 2 -> 1, 3 -> 3, 4 alone
        let successors = vec![vec![1], vec![2], vec![1], vec![3], vec![]];
        let component = strongly_connected(&successors);
        assert_eq!(component[1], component[2]);
        assert_ne!(component[0], component[1]);
        assert_ne!(component[3], component[4]);
        let mut finder = CycleFinder::new(&successors, &component);
        assert_eq!(finder.shortest_cycle(1), [1, 2, 1]);
        assert_eq!(finder.shortest_cycle(3), [3, 3]);
    }

    #[test]
    fn the_shortest_cycle_is_reported_in_flow_order() {
        // 0 -> 1 -> 2 -> 3 -> 0 and 1 -> 0: the short way back is 0 > 1 > 0.
        let successors = vec![vec![1], vec![2, 0], vec![3], vec![0]];
        let component = strongly_connected(&successors);
        let mut finder = CycleFinder::new(&successors, &component);
        assert_eq!(finder.shortest_cycle(0), [0, 1, 0]);
        assert_eq!(finder.shortest_cycle(2), [2, 3, 0, 1, 2]);
        assert_eq!(finder.shortest_cycle(0), [0, 1, 0], "the buffers are reset");
    }

    #[test]
    fn a_long_chain_does_not_recurse() {
        let n = 200_000u32;
        let successors: Vec<Vec<u32>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        let component = strongly_connected(&successors);
        assert!(component.iter().all(|&c| c == component[0]));
    }
}
