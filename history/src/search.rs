//! Answering searches from the indexes.
//!
//! A search reads one index: the narrowest that its equality conditions name (definition
//! key and state, definition key, process id and state, process id, state; or every
//! instance). Every index lists instances in key order, and within a partition the key
//! order is also the start-date order (keys come from a counter, timestamps never go
//! back), so a search sorted by key or by start date reads its page straight from the
//! index, from the cursor on, and stops when the page is full. Counting the matches for
//! `totalItems` stops at the search's `count_limit`. Other sorts read every match.

use std::cmp::Ordering;
use std::ops::ControlFlow;

use rill_protocol::history::{
    Condition, FieldValue, HistoricProcessInstance, ProcessInstanceField, ProcessInstancePage,
    ProcessInstanceSearch, compare_sorted,
};
use rill_protocol::{Key, ProcessInstanceState};

use crate::Result;
use crate::keys;
use crate::store::{HistoryRead, decode_instance, prefix_end, read_instance};

/// One process instance, active or finished within the retention.
pub fn process_instance<R: HistoryRead + ?Sized>(
    read: &R,
    key: Key,
) -> Result<Option<HistoricProcessInstance>> {
    read_instance(read, key)
}

fn state_of(value: &FieldValue) -> Option<ProcessInstanceState> {
    match value {
        FieldValue::Text(t) if t == "ACTIVE" => Some(ProcessInstanceState::Active),
        FieldValue::Text(t) if t == "COMPLETED" => Some(ProcessInstanceState::Completed),
        FieldValue::Text(t) if t == "TERMINATED" => Some(ProcessInstanceState::Terminated),
        _ => None,
    }
}

/// The index a search reads, and the filter conditions it already satisfies.
struct Plan {
    prefix: Vec<u8>,
    /// True when the index holds the instances themselves (the primary table).
    primary: bool,
    /// Indexes into the filter of the conditions the index satisfies.
    covered: Vec<usize>,
}

fn plan(filter: &[(ProcessInstanceField, Condition)]) -> Plan {
    let eq = |field: ProcessInstanceField| {
        filter.iter().enumerate().find_map(|(i, (f, c))| match c {
            Condition::Eq(v) if *f == field => Some((i, v)),
            Condition::In(list) if *f == field && list.len() == 1 => Some((i, &list[0])),
            _ => None,
        })
    };
    let state = eq(ProcessInstanceField::State).and_then(|(i, v)| Some((i, state_of(v)?)));
    let definition = eq(ProcessInstanceField::ProcessDefinitionKey).and_then(|(i, v)| match v {
        FieldValue::Int(k) => Some((i, Key(*k))),
        _ => None,
    });
    let process = eq(ProcessInstanceField::ProcessDefinitionId).and_then(|(i, v)| match v {
        FieldValue::Text(id) if id.len() <= usize::from(u16::MAX) => Some((i, id.as_str())),
        _ => None,
    });
    let mut covered: Vec<usize> = state.iter().map(|(i, _)| *i).collect();
    let state = state.map(|(_, s)| s);
    let prefix = if let Some((i, definition)) = definition {
        covered.push(i);
        keys::by_definition(definition, state)
    } else if let Some((i, id)) = process {
        covered.push(i);
        keys::by_process(id, state)
    } else if state.is_some() {
        keys::by_state(state)
    } else {
        covered.clear();
        return Plan {
            prefix: vec![keys::INSTANCE],
            primary: true,
            covered,
        };
    };
    Plan {
        prefix,
        primary: false,
        covered,
    }
}

/// Visits the instances under the plan's prefix in key order (backwards with
/// `reverse`), strictly after (before, backwards) `from`, until the visitor breaks.
fn visit<R: HistoryRead + ?Sized>(
    read: &R,
    plan: &Plan,
    from: Option<Key>,
    reverse: bool,
    load: bool,
    f: &mut dyn FnMut(Key, Option<HistoricProcessInstance>) -> ControlFlow<()>,
) -> Result<()> {
    let end_of_prefix = prefix_end(&plan.prefix);
    let (start, end) = match (from, reverse) {
        (None, _) => (plan.prefix.clone(), end_of_prefix),
        (Some(k), false) => {
            let mut start = keys::with_key(plan.prefix.clone(), k);
            start.push(0);
            (start, end_of_prefix)
        }
        (Some(k), true) => (plan.prefix.clone(), keys::with_key(plan.prefix.clone(), k)),
    };
    let mut failure = None;
    read.scan(&start, &end, reverse, &mut |index_key, value| {
        let Some(key) = keys::trailing_key(index_key) else {
            return ControlFlow::Continue(());
        };
        let instance = if !load {
            None
        } else if plan.primary {
            match decode_instance(index_key, value) {
                Ok(i) => Some(i),
                Err(e) => {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
            }
        } else {
            match read_instance(read, key) {
                Ok(Some(i)) => Some(i),
                // An index entry without its instance: not a match.
                Ok(None) => return ControlFlow::Continue(()),
                Err(e) => {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
            }
        };
        f(key, instance)
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The search's page of one partition (see the module comment).
pub fn search_process_instances<R: HistoryRead + ?Sized>(
    read: &R,
    search: &ProcessInstanceSearch,
) -> Result<ProcessInstancePage> {
    let limit = search.limit as usize;
    // A search for named keys reads just those.
    if let Some(keys) = named_keys(&search.filter) {
        let mut items = Vec::new();
        for key in keys {
            if let Some(instance) = read_instance(read, key)?
                && instance.matches(&search.filter)
            {
                items.push(instance);
            }
        }
        return Ok(page_of(items, search, limit));
    }
    let plan = plan(&search.filter);
    let residual: Vec<(ProcessInstanceField, Condition)> = search
        .filter
        .iter()
        .enumerate()
        .filter(|(i, _)| !plan.covered.contains(i))
        .map(|(_, c)| c.clone())
        .collect();

    // Count the matches, up to the limit.
    let count_limit = u64::from(search.count_limit);
    let mut total = 0u64;
    let mut more = false;
    visit(
        read,
        &plan,
        None,
        false,
        !residual.is_empty(),
        &mut |_, instance| {
            if instance.is_none_or(|i| i.matches(&residual)) {
                if total == count_limit {
                    more = true;
                    return ControlFlow::Break(());
                }
                total += 1;
            }
            ControlFlow::Continue(())
        },
    )?;

    let mut items = Vec::new();
    if limit == 0 {
        return Ok(ProcessInstancePage { items, total, more });
    }
    if let Some((reverse, by_key_alone)) = key_ordered(search) {
        // The index order is the sort order: read from the cursor on. A cursor's key
        // gives the place to start only when the sort is by key alone: after a start date
        // the cursor may name another partition's instance, whose key says nothing about
        // the order here, so the instances before it are passed over.
        let from = search
            .after
            .as_ref()
            .filter(|_| by_key_alone)
            .and_then(|after| match after.last() {
                Some(Some(FieldValue::Int(k))) => Some(Key(*k)),
                _ => None,
            });
        let skip_until = search.after.as_ref().filter(|_| !by_key_alone);
        visit(read, &plan, from, reverse, true, &mut |_, instance| {
            if let Some(instance) = instance
                && instance.matches(&residual)
                && skip_until.is_none_or(|after| {
                    compare_sorted(&search.sort, &instance.sort_values(&search.sort), after)
                        == Ordering::Greater
                })
            {
                items.push(instance);
            }
            if items.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        return Ok(ProcessInstancePage { items, total, more });
    }
    // Any other order: every match after the cursor, keeping the first `limit`.
    let mut kept: Vec<(Vec<Option<FieldValue>>, HistoricProcessInstance)> = Vec::new();
    let sort = &search.sort;
    let by_sort = |a: &(Vec<Option<FieldValue>>, HistoricProcessInstance),
                   b: &(Vec<Option<FieldValue>>, HistoricProcessInstance)| {
        compare_sorted(sort, &a.0, &b.0)
    };
    visit(read, &plan, None, false, true, &mut |_, instance| {
        if let Some(instance) = instance
            && instance.matches(&residual)
        {
            let values = instance.sort_values(sort);
            let after_cursor = search
                .after
                .as_ref()
                .is_none_or(|after| compare_sorted(sort, &values, after) == Ordering::Greater);
            if after_cursor {
                kept.push((values, instance));
                if kept.len() >= limit * 2 + 64 {
                    kept.sort_by(by_sort);
                    kept.truncate(limit);
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    kept.sort_by(by_sort);
    kept.truncate(limit);
    items = kept.into_iter().map(|(_, i)| i).collect();
    Ok(ProcessInstancePage { items, total, more })
}

/// The keys a filter names with `$eq` or `$in` on `processInstanceKey`, if it does.
fn named_keys(filter: &[(ProcessInstanceField, Condition)]) -> Option<Vec<Key>> {
    filter.iter().find_map(|(field, condition)| {
        if *field != ProcessInstanceField::ProcessInstanceKey {
            return None;
        }
        let values = match condition {
            Condition::Eq(v) => std::slice::from_ref(v),
            Condition::In(list) => list.as_slice(),
            _ => return None,
        };
        let mut keys: Vec<Key> = values
            .iter()
            .filter_map(|v| match v {
                FieldValue::Int(k) => Some(Key(*k)),
                _ => None,
            })
            .collect();
        keys.sort();
        keys.dedup();
        Some(keys)
    })
}

/// Filters nothing more: sorts the given matches and takes the page after the cursor.
fn page_of(
    mut items: Vec<HistoricProcessInstance>,
    search: &ProcessInstanceSearch,
    limit: usize,
) -> ProcessInstancePage {
    let total = items.len() as u64;
    let sort = &search.sort;
    items.sort_by(|a, b| compare_sorted(sort, &a.sort_values(sort), &b.sort_values(sort)));
    if let Some(after) = &search.after {
        items.retain(|i| compare_sorted(sort, &i.sort_values(sort), after) == Ordering::Greater);
    }
    items.truncate(limit);
    ProcessInstancePage {
        items,
        total,
        more: false,
    }
}

/// `Some((reverse, by key alone))` when the sort is the index order: by key alone, or by
/// start date then key in the same direction.
fn key_ordered(search: &ProcessInstanceSearch) -> Option<(bool, bool)> {
    match search.sort.as_slice() {
        [only] if only.field == ProcessInstanceField::ProcessInstanceKey => {
            Some((only.descending, true))
        }
        [first, second]
            if first.field == ProcessInstanceField::StartDate
                && second.field == ProcessInstanceField::ProcessInstanceKey
                && first.descending == second.descending =>
        {
            Some((first.descending, false))
        }
        _ => None,
    }
}
