//! Answering searches from the indexes, for every kind of entry ([`Table`]).
//!
//! A search reads one index: the first of the table's indexes (most specific first) whose
//! every field its filter names with one value (`$eq`, or `$in` with one value); or every
//! entry. Every index lists entries in key order, and within a partition the key order is
//! also the order of the table's creation date if it has one (keys come from a counter,
//! timestamps never go back), so a search sorted by key, or by that date then key, reads
//! its page straight from the index, from the cursor on, and stops when the page is full.
//! Counting the matches for `totalItems` stops at the search's `count_limit`. Other sorts
//! read every match.

use std::cmp::Ordering;
use std::ops::ControlFlow;

use rill_protocol::Key;
use std::collections::BTreeMap;

use rill_protocol::history::{
    Condition, ElementState, ElementStatistics, FieldValue, Historic, HistoricDecisionDefinition,
    HistoricElementInstance, HistoricProcessInstance, Page, ProcessInstanceField,
    ProcessInstancePage, ProcessInstanceSearch, Search, compare_sorted,
};

use crate::keys;
use crate::store::{HistoryRead, decode, prefix_end, read};
use crate::table::{Table, single};
use crate::{HistoryError, Result};

/// One entry, by its key.
pub fn get<T: Table, R: HistoryRead + ?Sized>(store: &R, key: Key) -> Result<Option<T>> {
    read(store, key)
}

/// One process instance, active or finished within the retention.
pub fn process_instance<R: HistoryRead + ?Sized>(
    store: &R,
    key: Key,
) -> Result<Option<HistoricProcessInstance>> {
    read(store, key)
}

/// The page of one partition for a process instance search.
pub fn search_process_instances<R: HistoryRead + ?Sized>(
    store: &R,
    search: &ProcessInstanceSearch,
) -> Result<ProcessInstancePage> {
    self::search(store, search)
}

/// The XML a process definition was deployed with.
pub fn definition_xml<R: HistoryRead + ?Sized>(store: &R, key: Key) -> Result<Option<String>> {
    Ok(store
        .get(&keys::entry(keys::DEFINITION_XML, key))?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// The DMN resource of a decision requirements graph, or of the graph a decision
/// belongs to.
pub fn decision_xml<R: HistoryRead + ?Sized>(store: &R, key: Key) -> Result<Option<String>> {
    let graph = match get::<HistoricDecisionDefinition, R>(store, key)? {
        Some(decision) => decision.decision_requirements_key,
        None => key,
    };
    Ok(store
        .get(&keys::entry(keys::DECISION_XML, graph))?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// Per element of the definition, how many of its instances are active, completed,
/// terminated and have an open incident, over this partition's process instances of the
/// definition that match `filter`. Sorted by element id.
pub fn element_statistics<R: HistoryRead + ?Sized>(
    store: &R,
    definition: Key,
    filter: &[(ProcessInstanceField, Condition)],
) -> Result<Vec<ElementStatistics>> {
    let mut of_definition = filter.to_vec();
    of_definition.push((
        ProcessInstanceField::ProcessDefinitionKey,
        Condition::Eq(FieldValue::Int(definition.get())),
    ));
    let plan = plan::<HistoricProcessInstance>(&of_definition);
    let residual: Vec<_> = of_definition
        .iter()
        .enumerate()
        .filter(|(i, _)| !plan.covered.contains(i))
        .map(|(_, c)| c.clone())
        .collect();
    let mut by_element: BTreeMap<String, ElementStatistics> = BTreeMap::new();
    let mut failure = None;
    visit::<HistoricProcessInstance, R>(store, &plan, None, false, true, &mut |instance| {
        let Some(instance) = instance.filter(|i| i.matches(&residual)) else {
            return ControlFlow::Continue(());
        };
        match count_elements(store, instance.key, &mut by_element) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failure = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(by_element.into_values().collect()),
    }
}

/// Adds the element instances of one process instance to the counts.
fn count_elements<R: HistoryRead + ?Sized>(
    store: &R,
    instance: Key,
    by_element: &mut BTreeMap<String, ElementStatistics>,
) -> Result<()> {
    let prefix = keys::entry(keys::ELEMENT_BY_INSTANCE, instance);
    let mut element_keys = Vec::new();
    store.scan(&prefix, &prefix_end(&prefix), false, &mut |key, _| {
        element_keys.extend(keys::trailing_key(key));
        ControlFlow::Continue(())
    })?;
    for key in element_keys {
        let Some(element) = read::<HistoricElementInstance, R>(store, key)? else {
            continue;
        };
        let counts = by_element
            .entry(element.element_id.clone())
            .or_insert_with(|| ElementStatistics {
                element_id: element.element_id.clone(),
                ..ElementStatistics::default()
            });
        match element.state {
            ElementState::Active => counts.active += 1,
            ElementState::Completed => counts.completed += 1,
            ElementState::Terminated => counts.canceled += 1,
        }
        if element.incident_key.is_some() {
            counts.incidents += 1;
        }
    }
    Ok(())
}

/// The index a search reads, and the filter conditions it already satisfies.
struct Plan {
    prefix: Vec<u8>,
    /// True when the index holds the entries themselves (the primary table).
    primary: bool,
    /// Indexes into the filter of the conditions the index satisfies: by its key, or by
    /// the value it carries.
    covered: Vec<usize>,
    /// The conditions on the field the index carries as its value, checked on each
    /// index key read (see `Table::VALUE_FIELD`).
    on_value: Vec<ValueTest>,
}

/// A condition on an index value: equality tests compare the stored bytes (no decoding
/// for each of the many keys a count walks), any other decodes the value.
enum ValueTest {
    OneOf(Vec<Vec<u8>>),
    NoneOf(Vec<Vec<u8>>),
    Decoded(Condition),
}

impl ValueTest {
    fn new(condition: &Condition) -> ValueTest {
        let encode = |values: &[FieldValue]| -> Vec<Vec<u8>> {
            values.iter().map(|v| keys::index_value(Some(v))).collect()
        };
        match condition {
            Condition::Eq(v) => ValueTest::OneOf(encode(std::slice::from_ref(v))),
            Condition::In(list) => ValueTest::OneOf(encode(list)),
            Condition::Neq(v) => ValueTest::NoneOf(encode(std::slice::from_ref(v))),
            Condition::NotIn(list) => ValueTest::NoneOf(encode(list)),
            other => ValueTest::Decoded(other.clone()),
        }
    }

    /// Whether the stored value passes; `Err` for bytes no index value has.
    fn passes(&self, stored: &[u8]) -> std::result::Result<bool, ()> {
        Ok(match self {
            ValueTest::OneOf(values) => values.iter().any(|v| v == stored),
            ValueTest::NoneOf(values) => values.iter().all(|v| v != stored),
            ValueTest::Decoded(condition) => {
                condition.matches(keys::read_index_value(stored)?.as_ref())
            }
        })
    }
}

fn plan<T: Table>(filter: &[(T::Field, Condition)]) -> Plan {
    'index: for index in T::indexes() {
        let mut prefix = vec![index.table];
        let mut covered = Vec::new();
        for field in index.fields {
            let Some((i, value)) = filter
                .iter()
                .enumerate()
                .find_map(|(i, (f, c))| (f == field).then(|| single(c).map(|v| (i, v)))?)
            else {
                continue 'index;
            };
            if keys::value(&mut prefix, value).is_none() {
                continue 'index;
            }
            covered.push(i);
        }
        let mut on_value = Vec::new();
        if let Some(carried) = T::VALUE_FIELD.filter(|f| !index.fields.contains(f)) {
            for (i, (field, condition)) in filter.iter().enumerate() {
                if *field == carried {
                    covered.push(i);
                    on_value.push(ValueTest::new(condition));
                }
            }
        }
        return Plan {
            prefix,
            primary: false,
            covered,
            on_value,
        };
    }
    Plan {
        prefix: vec![T::PRIMARY],
        primary: true,
        covered: Vec::new(),
        on_value: Vec::new(),
    }
}

/// Visits the entries under the plan's prefix in key order (backwards with `reverse`),
/// strictly after (before, backwards) `from`, until the visitor breaks. Entries are read
/// only with `load`.
fn visit<T: Table, R: HistoryRead + ?Sized>(
    store: &R,
    plan: &Plan,
    from: Option<Key>,
    reverse: bool,
    load: bool,
    f: &mut dyn FnMut(Option<T>) -> ControlFlow<()>,
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
    store.scan(&start, &end, reverse, &mut |index_key, value| {
        let Some(key) = keys::trailing_key(index_key) else {
            return ControlFlow::Continue(());
        };
        for test in &plan.on_value {
            match test.passes(value) {
                Ok(true) => {}
                Ok(false) => return ControlFlow::Continue(()),
                Err(()) => {
                    failure = Some(HistoryError::Corrupt {
                        key: format!("{index_key:02x?}"),
                        reason: "index value".to_owned(),
                    });
                    return ControlFlow::Break(());
                }
            }
        }
        let entry = if !load {
            None
        } else if plan.primary {
            match decode::<T>(index_key, value) {
                Ok(e) => Some(e),
                Err(e) => {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
            }
        } else {
            match read::<T, R>(store, key) {
                Ok(Some(e)) => Some(e),
                // An index entry without its entry: not a match.
                Ok(None) => return ControlFlow::Continue(()),
                Err(e) => {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
            }
        };
        f(entry)
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The search's page of one partition (see the module comment).
pub fn search<T: Table, R: HistoryRead + ?Sized>(
    store: &R,
    search: &Search<T::Field>,
) -> Result<Page<T>> {
    let limit = search.limit as usize;
    // A search for named keys reads just those.
    if let Some(keys) = named_keys::<T>(&search.filter) {
        let mut items = Vec::new();
        for key in keys {
            if let Some(entry) = read::<T, R>(store, key)?
                && entry.matches(&search.filter)
            {
                items.push(entry);
            }
        }
        return Ok(page_of(items, search, limit));
    }
    let plan = plan::<T>(&search.filter);
    let residual: Vec<(T::Field, Condition)> = search
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
    visit::<T, R>(
        store,
        &plan,
        None,
        false,
        !residual.is_empty(),
        &mut |entry| {
            if entry.is_none_or(|e| e.matches(&residual)) {
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
        return Ok(Page { items, total, more });
    }
    if let Some((reverse, by_key_alone)) = key_ordered::<T>(search) {
        // The index order is the sort order: read from the cursor on. A cursor's key
        // gives the place to start only when the sort is by key alone: after a date the
        // cursor may name another partition's entry, whose key says nothing about the
        // order here, so the entries before it are passed over.
        let from = search
            .after
            .as_ref()
            .filter(|_| by_key_alone)
            .and_then(|after| match after.last() {
                Some(Some(FieldValue::Int(k))) => Some(Key(*k)),
                _ => None,
            });
        let skip_until = search.after.as_ref().filter(|_| !by_key_alone);
        visit::<T, R>(store, &plan, from, reverse, true, &mut |entry| {
            if let Some(entry) = entry
                && entry.matches(&residual)
                && skip_until.is_none_or(|after| {
                    compare_sorted(&search.sort, &entry.sort_values(&search.sort), after)
                        == Ordering::Greater
                })
            {
                items.push(entry);
            }
            if items.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        return Ok(Page { items, total, more });
    }
    // Any other order: every match after the cursor, keeping the first `limit`.
    let mut kept: Vec<(Vec<Option<FieldValue>>, T)> = Vec::new();
    let sort = &search.sort;
    let by_sort = |a: &(Vec<Option<FieldValue>>, T), b: &(Vec<Option<FieldValue>>, T)| {
        compare_sorted(sort, &a.0, &b.0)
    };
    visit::<T, R>(store, &plan, None, false, true, &mut |entry| {
        if let Some(entry) = entry
            && entry.matches(&residual)
        {
            let values = entry.sort_values(sort);
            let after_cursor = search
                .after
                .as_ref()
                .is_none_or(|after| compare_sorted(sort, &values, after) == Ordering::Greater);
            if after_cursor {
                kept.push((values, entry));
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
    items = kept.into_iter().map(|(_, e)| e).collect();
    Ok(Page { items, total, more })
}

/// The keys a filter names with `$eq` or `$in` on the table's key field, if it does.
fn named_keys<T: Table>(filter: &[(T::Field, Condition)]) -> Option<Vec<Key>> {
    filter.iter().find_map(|(field, condition)| {
        if *field != T::KEY_FIELD {
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
fn page_of<T: Table>(mut items: Vec<T>, search: &Search<T::Field>, limit: usize) -> Page<T> {
    let total = items.len() as u64;
    let sort = &search.sort;
    items.sort_by(|a, b| compare_sorted(sort, &a.sort_values(sort), &b.sort_values(sort)));
    if let Some(after) = &search.after {
        items.retain(|i| compare_sorted(sort, &i.sort_values(sort), after) == Ordering::Greater);
    }
    items.truncate(limit);
    Page {
        items,
        total,
        more: false,
    }
}

/// `Some((reverse, by key alone))` when the sort is the index order: by key alone, or by
/// the table's creation date then key in the same direction.
fn key_ordered<T: Table>(search: &Search<T::Field>) -> Option<(bool, bool)> {
    match search.sort.as_slice() {
        [only] if only.field == T::KEY_FIELD => Some((only.descending, true)),
        [first, second]
            if Some(first.field) == T::TIME_FIELD
                && second.field == T::KEY_FIELD
                && first.descending == second.descending =>
        {
            Some((first.descending, false))
        }
        _ => None,
    }
}
