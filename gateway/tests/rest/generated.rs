//! Generated requests against every served search and get, over a populated history
//! (the set-up of `shapes.rs`): bodies built from the 8.8 spec's facts of each operation
//! (filter fields and their types, operators, sort, page), right and wrong, and path
//! keys of every sort. A sweep first sends every operator of every filter field with a
//! right and a wrong value, and sorts by every field both ways (walked by its cursors);
//! then random cases mix them. Every answer must be below 500; a 2xx must match the
//! operation's schema, a 4xx must be a problem document with a status the spec lists.
//! The seed is fixed, so a failure replays; it is printed with every failing request.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use reqwest::Method;
use serde_json::{Value, json};

use crate::shapes::{
    Populated, element_instance, element_statistics, incident, job, message_subscription,
    populated, process_definition, process_instance, search_result, variable,
};
use crate::support::TestGateway;
use crate::support::schema::violations;

const SEED: u64 = 0x5EED_0C0D_E8A8_0001;

/// xorshift64*: small, seeded, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The type of a filter field in the spec.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A key: a string of digits (`BasicStringFilter`).
    Key,
    /// `AdvancedStringFilter`.
    Text,
    /// `AdvancedIntegerFilter` (32-bit).
    Int,
    /// `AdvancedDateTimeFilter`.
    Date,
    /// A plain boolean.
    Bool,
    /// An enum filter: one of the names.
    Enum(&'static [&'static str]),
}

use Kind::{Bool, Date, Int, Key, Text};

const INSTANCE_STATES: &[&str] = &["ACTIVE", "COMPLETED", "TERMINATED"];
const JOB_STATES: &[&str] = &[
    "CANCELED",
    "COMPLETED",
    "CREATED",
    "ERROR_THROWN",
    "FAILED",
    "MIGRATED",
    "RETRIES_UPDATED",
    "TIMED_OUT",
];
const JOB_KINDS: &[&str] = &[
    "BPMN_ELEMENT",
    "EXECUTION_LISTENER",
    "TASK_LISTENER",
    "AD_HOC_SUB_PROCESS",
];
const LISTENER_EVENTS: &[&str] = &[
    "ASSIGNING",
    "CANCELING",
    "COMPLETING",
    "CREATING",
    "END",
    "START",
    "UNSPECIFIED",
    "UPDATING",
];
const INCIDENT_STATES: &[&str] = &["ACTIVE", "MIGRATED", "RESOLVED", "PENDING"];
const ERROR_TYPES: &[&str] = &[
    "UNSPECIFIED",
    "UNKNOWN",
    "IO_MAPPING_ERROR",
    "JOB_NO_RETRIES",
    "CONDITION_ERROR",
    "EXTRACT_VALUE_ERROR",
    "CALLED_ELEMENT_ERROR",
    "UNHANDLED_ERROR_EVENT",
    "MESSAGE_SIZE_EXCEEDED",
    "CALLED_DECISION_ERROR",
    "DECISION_EVALUATION_ERROR",
    "FORM_NOT_FOUND",
    "RESOURCE_NOT_FOUND",
];
const ELEMENT_TYPES: &[&str] = &[
    "PROCESS",
    "SUB_PROCESS",
    "START_EVENT",
    "INTERMEDIATE_CATCH_EVENT",
    "END_EVENT",
    "SERVICE_TASK",
    "USER_TASK",
    "EXCLUSIVE_GATEWAY",
    "PARALLEL_GATEWAY",
    "SEQUENCE_FLOW",
    "UNKNOWN",
];
const SUBSCRIPTION_STATES: &[&str] = &["CORRELATED", "CREATED", "DELETED", "MIGRATED"];

const INSTANCE_FIELDS: &[(&str, Kind)] = &[
    ("processDefinitionId", Text),
    ("processDefinitionName", Text),
    ("processDefinitionVersion", Int),
    ("processDefinitionVersionTag", Text),
    ("processDefinitionKey", Key),
    ("processInstanceKey", Key),
    ("parentProcessInstanceKey", Key),
    ("parentElementInstanceKey", Key),
    ("startDate", Date),
    ("endDate", Date),
    ("state", Kind::Enum(INSTANCE_STATES)),
    ("hasIncident", Bool),
    ("tenantId", Text),
];
/// `ProcessDefinitionStatisticsFilter`: the instance filter without the definition's
/// fields (the definition is the path's).
const STATISTICS_FIELDS: &[(&str, Kind)] = &[
    ("processInstanceKey", Key),
    ("parentProcessInstanceKey", Key),
    ("parentElementInstanceKey", Key),
    ("startDate", Date),
    ("endDate", Date),
    ("state", Kind::Enum(INSTANCE_STATES)),
    ("hasIncident", Bool),
    ("tenantId", Text),
];
const JOB_FIELDS: &[(&str, Kind)] = &[
    ("deadline", Date),
    ("deniedReason", Text),
    ("elementId", Text),
    ("elementInstanceKey", Key),
    ("endTime", Date),
    ("errorCode", Text),
    ("errorMessage", Text),
    ("hasFailedWithRetriesLeft", Bool),
    ("isDenied", Bool),
    ("jobKey", Key),
    ("kind", Kind::Enum(JOB_KINDS)),
    ("listenerEventType", Kind::Enum(LISTENER_EVENTS)),
    ("processDefinitionId", Text),
    ("processDefinitionKey", Key),
    ("processInstanceKey", Key),
    ("retries", Int),
    ("state", Kind::Enum(JOB_STATES)),
    ("tenantId", Text),
    ("type", Text),
    ("worker", Text),
];
const INCIDENT_FIELDS: &[(&str, Kind)] = &[
    ("processDefinitionId", Text),
    ("errorType", Kind::Enum(ERROR_TYPES)),
    ("errorMessage", Text),
    ("elementId", Text),
    ("creationTime", Date),
    ("state", Kind::Enum(INCIDENT_STATES)),
    ("tenantId", Text),
    ("incidentKey", Key),
    ("processDefinitionKey", Key),
    ("processInstanceKey", Key),
    ("elementInstanceKey", Key),
    ("jobKey", Key),
];
const VARIABLE_FIELDS: &[(&str, Kind)] = &[
    ("name", Text),
    ("value", Text),
    ("tenantId", Text),
    ("isTruncated", Bool),
    ("variableKey", Key),
    ("scopeKey", Key),
    ("processInstanceKey", Key),
];
const ELEMENT_FIELDS: &[(&str, Kind)] = &[
    ("processDefinitionId", Text),
    ("state", Kind::Enum(INSTANCE_STATES)),
    ("type", Kind::Enum(ELEMENT_TYPES)),
    ("elementId", Text),
    ("elementName", Text),
    ("hasIncident", Bool),
    ("tenantId", Text),
    ("elementInstanceKey", Key),
    ("processInstanceKey", Key),
    ("processDefinitionKey", Key),
    ("incidentKey", Key),
    ("startDate", Date),
    ("endDate", Date),
];
const DEFINITION_FIELDS: &[(&str, Kind)] = &[
    ("isLatestVersion", Bool),
    ("processDefinitionKey", Key),
    ("name", Text),
    ("resourceName", Text),
    ("version", Int),
    ("versionTag", Text),
    ("processDefinitionId", Text),
    ("tenantId", Text),
    ("hasStartForm", Bool),
];
const SUBSCRIPTION_FIELDS: &[(&str, Kind)] = &[
    ("messageSubscriptionKey", Key),
    ("processDefinitionId", Text),
    ("processInstanceKey", Key),
    ("elementId", Text),
    ("elementInstanceKey", Key),
    ("messageSubscriptionState", Kind::Enum(SUBSCRIPTION_STATES)),
    ("lastUpdatedDate", Date),
    ("messageName", Text),
    ("correlationKey", Text),
    ("tenantId", Text),
];

/// What a served operation takes and answers.
struct Operation {
    name: &'static str,
    method: Method,
    /// With `{key}` where the path takes one.
    path: &'static str,
    /// The spec's filter fields (empty: the operation takes no body).
    fields: &'static [(&'static str, Kind)],
    /// Fields the spec's sort does not have.
    unsorted: &'static [&'static str],
    /// Whether the body has `sort` and `page` (searches; statistics has a filter only).
    paged: bool,
    /// The answer's schema; `None`: XML.
    schema: Option<Value>,
    /// The 4xx statuses the spec lists for it.
    client_errors: &'static [u16],
}

/// What the spec says the answer to a generated request is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// A well-formed request: 200.
    Ok,
    /// Malformed: 400.
    Bad,
    /// An unknown key in the path: 404.
    Missing,
    /// Any status the spec lists for the operation.
    Listed,
}

/// Combines what the path and the body call for: the path is read first.
fn both(path: Expect, body: Expect) -> Expect {
    match (path, body) {
        (Expect::Ok, body) => body,
        (Expect::Bad, _) => Expect::Bad,
        (Expect::Missing, Expect::Ok) => Expect::Missing,
        _ => Expect::Listed,
    }
}

/// A generated request.
struct Case {
    method: Method,
    path: String,
    body: Option<Vec<u8>>,
    expect: Expect,
    /// Where its answer's cursors go (and which cursors it may use): the operation and
    /// its sort, when it is a well-formed search.
    cursor_slot: Option<String>,
}

/// Keys from the populated history, by what they name.
struct Known {
    by_kind: BTreeMap<&'static str, Vec<String>>,
    texts: Vec<String>,
}

impl Known {
    fn keys(&self, kind: &str) -> &[String] {
        self.by_kind.get(kind).map_or(&[], Vec::as_slice)
    }

    fn any_key(&self, rng: &mut Rng) -> String {
        let all: Vec<&String> = self.by_kind.values().flatten().collect();
        all[rng.below(all.len())].clone()
    }
}

/// A right value of the kind.
fn right(rng: &mut Rng, kind: Kind, known: &Known) -> Value {
    match kind {
        Key => {
            if rng.chance(70) {
                json!(known.any_key(rng))
            } else {
                let edges = ["1", "9223372036854775807", "2251799813685248"];
                let random = (rng.next() >> 2).max(1).to_string();
                json!(if rng.chance(50) {
                    random
                } else {
                    rng.pick(&edges).to_string()
                })
            }
        }
        Text => {
            let choices = [
                rng.pick(&known.texts).clone(),
                String::new(),
                "ü∂ 雪 \u{1F600}".to_owned(),
                "a\"b\\c\n".to_owned(),
                "x".repeat(rng.below(300)),
                "y".repeat(9_000),
                "\\".to_owned(),
            ];
            json!(rng.pick(&choices))
        }
        Int => json!(*rng.pick(&[0, 1, 2, -1, i64::from(i32::MAX), i64::from(i32::MIN)])),
        Date if rng.chance(15) => json!(rng.pick(&[
            "1970-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999Z",
            "2026-01-01T00:00:00+02:00",
        ])),
        Date => {
            // 1970 to about 2100, as RFC 3339 UTC with milliseconds.
            let millis = rng.next() % 4_102_444_800_000;
            let time = UNIX_EPOCH + Duration::from_millis(millis);
            json!(humantime::format_rfc3339_millis(time).to_string())
        }
        Bool => json!(rng.chance(50)),
        Kind::Enum(names) => json!(rng.pick(names)),
    }
}

/// A value of the wrong type (or out of range) for the kind.
fn wrong(rng: &mut Rng, kind: Kind) -> Value {
    let choices: Vec<Value> = match kind {
        Key => vec![
            json!(12),
            json!("abc"),
            json!("-5"),
            json!("0"),
            json!("99999999999999999999"),
            json!(true),
            json!(null),
            json!({}),
            json!(1.5),
        ],
        Text => vec![
            json!(5),
            json!(true),
            json!(null),
            json!([["x"]]),
            json!(1e300),
        ],
        Int => vec![
            json!("1"),
            json!(1.5),
            json!(4_294_967_296_i64),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(true),
            json!(null),
        ],
        Date => vec![
            json!("yesterday"),
            json!(5),
            json!("2025-13-45T99:00:00Z"),
            json!("2025-01-01T00:00:00+24:00"),
            json!("2025-01-01T00:00:00+1:00"),
            json!(""),
            json!(null),
            json!({"at": 1}),
        ],
        Bool => vec![json!("true"), json!(1), json!(null), json!([true])],
        Kind::Enum(_) => vec![json!("NOPE"), json!(3), json!(""), json!(null)],
    };
    rng.pick(&choices).clone()
}

/// The operators the spec gives the kind's filter (booleans take a plain value only).
fn operators(kind: Kind) -> &'static [&'static str] {
    match kind {
        Key => &["$eq", "$neq", "$in", "$notIn", "$exists"],
        Text | Kind::Enum(_) => &["$eq", "$neq", "$in", "$notIn", "$exists", "$like"],
        Int | Date => &[
            "$eq", "$neq", "$in", "$notIn", "$exists", "$gt", "$gte", "$lt", "$lte",
        ],
        Bool => &[],
    }
}

/// A well-formed condition on a field: a plain value or an operator object.
fn condition(rng: &mut Rng, kind: Kind, known: &Known) -> Value {
    let ops = operators(kind);
    if ops.is_empty() || rng.chance(25) {
        return right(rng, kind, known);
    }
    let mut object = serde_json::Map::new();
    for _ in 0..=rng.below(2) {
        let op = *rng.pick(ops);
        let operand = match op {
            "$in" | "$notIn" => {
                let n = rng.below(4);
                Value::Array((0..n).map(|_| right(rng, kind, known)).collect())
            }
            "$exists" => json!(rng.chance(50)),
            "$like" => json!(rng.pick(&[
                "*", "shap*", "?haped", "o-\\*", "", "**?*", "\\", "ü?*", "%_"
            ])),
            _ => right(rng, kind, known),
        };
        object.insert(op.to_owned(), operand);
    }
    Value::Object(object)
}

/// A malformed condition on a field.
fn bad_condition(rng: &mut Rng, kind: Kind) -> Value {
    match rng.below(7) {
        0 => wrong(rng, kind),
        1 => json!({"$eq": wrong(rng, kind)}),
        2 => json!({"$in": wrong(rng, kind)}),
        3 => json!({"$in": [wrong(rng, kind)]}),
        4 => json!({"$exists": "yes"}),
        5 => json!({"$regex": ".*"}),
        _ => {
            // An operator the kind does not have, or none at all.
            let op = match kind {
                Key | Int | Date | Bool => "$like",
                Text | Kind::Enum(_) => "$gt",
            };
            if rng.chance(50) {
                json!({ op: "x" })
            } else {
                json!({})
            }
        }
    }
}

/// Cursors from earlier answers: by the operation and sort that gave them, and all.
#[derive(Default)]
struct Cursors {
    by_slot: BTreeMap<String, Vec<String>>,
    all: Vec<String>,
}

impl Cursors {
    fn keep(&mut self, slot: &str, body: &Value) {
        for end in ["startCursor", "endCursor"] {
            if let Some(cursor) = body["page"][end].as_str() {
                let slot = self.by_slot.entry(slot.to_owned()).or_default();
                if !slot.iter().any(|c| c == cursor) {
                    slot.push(cursor.to_owned());
                    self.all.push(cursor.to_owned());
                }
            }
        }
    }
}

/// Cursors no answer gives: not base64, or not of JSON.
const GARBAGE_CURSORS: &[&str] = &[
    "",
    "=",
    "not-a-cursor",
    "AAAA",
    "////",
    "%%%%",
    "eyJJbnQiOjF9", // {"Int":1}
    "W1s=",         // [[
];

/// Cursors of the right form (base64 of JSON sort values) that no answer gave: a page
/// when their length fits the sort, else a 400.
const FORGED_CURSORS: &[&str] = &[
    "W10=",                         // []
    "WzFd",                         // [1]
    "W251bGwsbnVsbF0=",             // [null,null]
    "W3siSW50IjoxfV0=",             // [{"Int":1}]
    "W3siVGV4dCI6MX1d",             // [{"Text":1}]
    "W3siQm9vbCI6dHJ1ZX0sbnVsbF0=", // [{"Bool":true},null]
];

/// A search body: mostly well-formed, else one thing wrong.
fn search_body(
    rng: &mut Rng,
    op: &Operation,
    known: &Known,
    cursors: &Cursors,
) -> (Value, Expect, Option<String>) {
    let mut expect = Expect::Ok;
    let mut body = serde_json::Map::new();
    let mut filter = serde_json::Map::new();
    for _ in 0..rng.below(3) {
        let (name, kind) = *rng.pick(op.fields);
        filter.insert(name.to_owned(), condition(rng, kind, known));
    }
    if !filter.is_empty() || rng.chance(20) {
        body.insert("filter".into(), Value::Object(filter));
    }
    let mut sort = Vec::new();
    if op.paged {
        let sortable: Vec<&str> = op
            .fields
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| !op.unsorted.contains(name))
            .collect();
        for _ in 0..rng.below(3) {
            let field = *rng.pick(&sortable);
            if sort.iter().any(|s: &Value| s["field"] == field) {
                continue;
            }
            sort.push(match rng.below(3) {
                0 => json!({"field": field}),
                1 => json!({"field": field, "order": "ASC"}),
                _ => json!({"field": field, "order": "DESC"}),
            });
        }
        if !sort.is_empty() {
            body.insert("sort".into(), Value::Array(sort.clone()));
        }
    }
    let slot = format!("{} {}", op.name, Value::Array(sort.clone()));
    let mut cursor_slot = Some(slot.clone());
    if op.paged && rng.chance(60) {
        let mut page = serde_json::Map::new();
        if rng.chance(60) {
            let limits = [1, 2, 3, 100, 10_000];
            page.insert("limit".into(), json!(rng.pick(&limits)));
        }
        let valid = cursors.by_slot.get(&slot).map_or(&[][..], Vec::as_slice);
        match rng.below(4) {
            0 => {
                page.insert("from".into(), json!(rng.below(5)));
            }
            1 | 2 if !valid.is_empty() => {
                let end = if rng.chance(50) { "after" } else { "before" };
                page.insert(end.into(), json!(rng.pick(valid)));
            }
            _ => {}
        }
        body.insert("page".into(), Value::Object(page));
    }

    // One thing wrong, or one thing whose answer the spec leaves open.
    if rng.chance(45) {
        expect = Expect::Bad;
        cursor_slot = None;
        let (name, kind) = *rng.pick(op.fields);
        let choice = if op.paged {
            rng.below(12)
        } else {
            rng.below(5)
        };
        match choice {
            0 | 1 => {
                let mut filter = serde_json::Map::new();
                filter.insert(name.to_owned(), bad_condition(rng, kind));
                body.insert("filter".into(), Value::Object(filter));
            }
            2 => {
                body.insert("colour".into(), json!("red"));
            }
            3 => {
                let not_object = [json!([]), json!("x"), json!(7), json!(true)];
                body.insert("filter".into(), rng.pick(&not_object).clone());
            }
            4 => {
                body.insert("filter".into(), json!({"noSuchField": "x"}));
            }
            5 => {
                let sorts = [
                    json!([{"field": "noSuchField"}]),
                    json!([{"field": name, "order": "UP"}]),
                    json!([{"field": 5}]),
                    json!([{"order": "ASC"}]),
                    json!({"field": name}),
                    json!("state"),
                    json!([{"field": name, "extra": 1}]),
                ];
                body.insert("sort".into(), rng.pick(&sorts).clone());
            }
            6 | 7 => {
                let pages = [
                    json!({"limit": 0}),
                    json!({"limit": -1}),
                    json!({"limit": 10_001}),
                    json!({"limit": 1e30}),
                    json!({"limit": "5"}),
                    json!({"limit": u64::MAX}),
                    json!({"from": -1}),
                    json!({"from": i64::MAX}),
                    json!({"from": 1.5}),
                    json!({"after": "AAAA", "before": "AAAA"}),
                    json!({"from": 1, "after": "AAAA"}),
                    json!({"after": 5}),
                    json!({"size": 5}),
                    json!([]),
                ];
                body.insert("page".into(), rng.pick(&pages).clone());
            }
            8 => {
                let end = if rng.chance(50) { "after" } else { "before" };
                let cursor = rng.pick(GARBAGE_CURSORS);
                body.insert("page".into(), json!({ end: cursor }));
            }
            9 => {
                expect = Expect::Listed;
                let end = if rng.chance(50) { "after" } else { "before" };
                let cursor = rng.pick(FORGED_CURSORS);
                body.insert("page".into(), json!({ end: cursor }));
            }
            _ => {
                // A cursor of another operation or sort: a 400, or a page if its
                // values fit this sort.
                expect = Expect::Listed;
                if !cursors.all.is_empty() {
                    let end = if rng.chance(50) { "after" } else { "before" };
                    body.insert("page".into(), json!({ end: rng.pick(&cursors.all) }));
                }
            }
        }
    }
    (Value::Object(body), expect, cursor_slot)
}

/// A raw body that is not a well-formed request.
fn raw_body(rng: &mut Rng) -> (Vec<u8>, Expect) {
    let depth = 50 + rng.below(400);
    let choices: Vec<(Vec<u8>, Expect)> = vec![
        // An empty body is an empty search (the body is optional).
        (b"".to_vec(), Expect::Ok),
        (b"   ".to_vec(), Expect::Ok),
        (b"{}".to_vec(), Expect::Ok),
        (b"null".to_vec(), Expect::Bad),
        (b"[]".to_vec(), Expect::Bad),
        (b"\"filter\"".to_vec(), Expect::Bad),
        (b"{".to_vec(), Expect::Bad),
        (b"{} {}".to_vec(), Expect::Bad),
        (b"<xml/>".to_vec(), Expect::Bad),
        (
            b"{\"filter\": {\"tenantId\": \"\xff\xfe\"}}".to_vec(),
            Expect::Bad,
        ),
        (b"\xff\xfe\x00{".to_vec(), Expect::Bad),
        (b"{\"page\": {\"limit\": 1e999}}".to_vec(), Expect::Bad),
        // Nulls and number spellings the spec's types leave open: any listed answer.
        (
            b"{\"filter\": null, \"sort\": null, \"page\": null}".to_vec(),
            Expect::Listed,
        ),
        (
            b"{\"page\": {\"limit\": null, \"from\": null}}".to_vec(),
            Expect::Listed,
        ),
        (
            b"{\"page\": {\"limit\": 1E2, \"from\": -0}}".to_vec(),
            Expect::Listed,
        ),
        (
            b"{\"sort\": [null], \"filter\": {\"tenantId\": null}}".to_vec(),
            Expect::Listed,
        ),
        (
            b"{\"page\": {\"from\": 340282366920938463463374607431768211456}}".to_vec(),
            Expect::Bad,
        ),
        (
            b"{\"filter\": {\"tenantId\": \"a\", \"tenantId\": 5}}".to_vec(),
            Expect::Bad,
        ),
        (
            format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes(),
            Expect::Bad,
        ),
        (
            format!(
                "{{\"filter\": {}1{}}}",
                "{\"a\": ".repeat(depth),
                "}".repeat(depth)
            )
            .into_bytes(),
            Expect::Bad,
        ),
        (
            format!(
                "{{\"filter\": {{\"tenantId\": {{\"$in\": {}\"x\"{}}}}}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            )
            .into_bytes(),
            Expect::Bad,
        ),
    ];
    rng.pick(&choices).clone()
}

/// A path key: a known one of the right kind, or one of every wrong sort.
fn path_key(rng: &mut Rng, kind: &str, known: &Known) -> (String, Expect) {
    let own = known.keys(kind);
    match rng.below(10) {
        0..=3 if !own.is_empty() => (rng.pick(own).clone(), Expect::Ok),
        4 => {
            // A key of another kind of entity, or one never given out: not found.
            let other: Vec<&String> = known
                .by_kind
                .iter()
                .filter(|(k, _)| **k != kind)
                .flat_map(|(_, keys)| keys)
                .filter(|key| !own.contains(key))
                .collect();
            ((*rng.pick(&other)).clone(), Expect::Missing)
        }
        5 => {
            // Partition 1 or 2 (of two), a counter nothing reached.
            let partition = 1 + rng.below(2) as i64;
            (
                (partition << 51 | 4_000_000_000).to_string(),
                Expect::Missing,
            )
        }
        6 => {
            // Partition 9 of a two-partition cluster, and the largest key.
            let choices = [(9_i64 << 51 | 1).to_string(), i64::MAX.to_string()];
            (rng.pick(&choices).clone(), Expect::Missing)
        }
        _ => {
            let choices = [
                "abc",
                "-1",
                "-2251799813685249",
                "0",
                "1",
                "99999999999999999999",
                "1e5",
                "1.5",
                "%FF%FE",
                "%20",
                "0x10",
                "+",
            ];
            (rng.pick(&choices).to_string(), Expect::Bad)
        }
    }
}

struct Answer {
    status: u16,
    content_type: String,
    bytes: Vec<u8>,
}

async fn send(gateway: &TestGateway, case: &Case) -> Answer {
    let mut request = gateway
        .client
        .request(case.method.clone(), gateway.url(&case.path));
    if let Some(body) = &case.body {
        request = request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let bytes = response.bytes().await.expect("body").to_vec();
    Answer {
        status,
        content_type,
        bytes,
    }
}

/// Every way the answer breaks the spec or the expectation (empty: none).
fn judge(op: &Operation, case: &Case, answer: &Answer) -> Vec<String> {
    let mut found = Vec::new();
    let status = answer.status;
    if status != 200 && !op.client_errors.contains(&status) {
        found.push(format!(
            "status {status} is not 200 or one of {:?}",
            op.client_errors
        ));
    }
    let wanted = match case.expect {
        Expect::Ok => Some(200),
        Expect::Bad => Some(400),
        Expect::Missing => Some(404),
        Expect::Listed => None,
    };
    if let Some(wanted) = wanted
        && wanted != status
    {
        found.push(format!(
            "expected {wanted} ({:?}), got {status}",
            case.expect
        ));
    }
    let json: Option<Value> = serde_json::from_slice(&answer.bytes).ok();
    if (200..300).contains(&status) {
        match (&op.schema, &json) {
            (Some(schema), Some(body)) => found.extend(violations(schema, body)),
            (Some(_), None) => found.push("a 2xx body that is not JSON".into()),
            (None, _) => {
                if !answer.content_type.starts_with("text/xml")
                    || !answer.bytes.starts_with(b"<?xml")
                {
                    found.push(format!("not XML ({})", answer.content_type));
                }
            }
        }
    } else if (400..500).contains(&status) {
        if answer.content_type != "application/problem+json" {
            found.push(format!("a problem as {:?}", answer.content_type));
        }
        let path = case.path.split('?').next().unwrap_or_default();
        match &json {
            Some(problem) => {
                if problem["type"] != "about:blank" {
                    found.push(format!("problem type {}", problem["type"]));
                }
                if problem["title"].as_str().is_none_or(str::is_empty) {
                    found.push(format!("problem title {}", problem["title"]));
                }
                if problem["status"] != status {
                    found.push(format!("problem status {}", problem["status"]));
                }
                if problem["detail"].as_str().is_none_or(str::is_empty) {
                    found.push(format!("problem detail {}", problem["detail"]));
                }
                if problem["instance"] != path {
                    found.push(format!(
                        "problem instance {} for {path}",
                        problem["instance"]
                    ));
                }
            }
            None => found.push("a 4xx body that is not JSON".into()),
        }
    }
    found
}

fn operations() -> Vec<Operation> {
    let search = |name, path, fields, unsorted, schema| Operation {
        name,
        method: Method::POST,
        path,
        fields,
        unsorted,
        paged: true,
        schema: Some(schema),
        client_errors: if path.contains("{key}") {
            &[400, 404]
        } else {
            &[400]
        },
    };
    let get = |name, path, schema| Operation {
        name,
        method: Method::GET,
        path,
        fields: &[],
        unsorted: &[],
        paged: false,
        schema,
        client_errors: &[400, 404],
    };
    vec![
        search(
            "searchProcessInstances",
            "/v2/process-instances/search",
            INSTANCE_FIELDS,
            &[],
            search_result(process_instance(), true),
        ),
        search(
            "searchProcessInstanceIncidents",
            "/v2/process-instances/{key}/incidents/search",
            INCIDENT_FIELDS,
            &[],
            search_result(incident(), false),
        ),
        search(
            "searchJobs",
            "/v2/jobs/search",
            JOB_FIELDS,
            &[],
            search_result(job(), true),
        ),
        search(
            "searchIncidents",
            "/v2/incidents/search",
            INCIDENT_FIELDS,
            &[],
            search_result(incident(), false),
        ),
        search(
            "searchElementInstances",
            "/v2/element-instances/search",
            ELEMENT_FIELDS,
            &[],
            search_result(element_instance(), false),
        ),
        search(
            "searchProcessDefinitions",
            "/v2/process-definitions/search",
            DEFINITION_FIELDS,
            &["isLatestVersion", "hasStartForm"],
            search_result(process_definition(), false),
        ),
        search(
            "searchMessageSubscriptions",
            "/v2/message-subscriptions/search",
            SUBSCRIPTION_FIELDS,
            &[],
            search_result(message_subscription(), false),
        ),
        search(
            "searchVariables",
            "/v2/variables/search",
            VARIABLE_FIELDS,
            &[],
            search_result(variable(), false),
        ),
        Operation {
            name: "getProcessDefinitionElementStatistics",
            method: Method::POST,
            path: "/v2/process-definitions/{key}/statistics/element-instances",
            fields: STATISTICS_FIELDS,
            unsorted: &[],
            paged: false,
            schema: Some(element_statistics()),
            // The spec lists no 404: statistics of an unknown definition are empty.
            client_errors: &[400],
        },
        get(
            "getProcessInstance",
            "/v2/process-instances/{key}",
            Some(process_instance()),
        ),
        get("getIncident", "/v2/incidents/{key}", Some(incident())),
        get(
            "getElementInstance",
            "/v2/element-instances/{key}",
            Some(element_instance()),
        ),
        get(
            "getProcessDefinition",
            "/v2/process-definitions/{key}",
            Some(process_definition()),
        ),
        get(
            "getProcessDefinitionXml",
            "/v2/process-definitions/{key}/xml",
            None,
        ),
        get("getVariable", "/v2/variables/{key}", Some(variable())),
    ]
}

/// Which kind of key an operation's path takes.
fn path_kind(op: &Operation) -> &'static str {
    match op.path.split('/').nth(2) {
        Some("process-instances") => "processInstance",
        Some("incidents") => "incident",
        Some("element-instances") => "elementInstance",
        Some("process-definitions") => "processDefinition",
        _ => "variable",
    }
}

/// The keys and texts of the populated history, read through the searches.
async fn known(gateway: &TestGateway, populated: &Populated) -> Known {
    let mut by_kind: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut texts = vec!["shaped".to_owned(), "o-1".to_owned(), "work".to_owned()];
    for (path, field, kind) in [
        (
            "/v2/process-instances/search",
            "processInstanceKey",
            "processInstance",
        ),
        ("/v2/incidents/search", "incidentKey", "incident"),
        (
            "/v2/element-instances/search",
            "elementInstanceKey",
            "elementInstance",
        ),
        (
            "/v2/process-definitions/search",
            "processDefinitionKey",
            "processDefinition",
        ),
        ("/v2/variables/search", "variableKey", "variable"),
        ("/v2/jobs/search", "jobKey", "job"),
        (
            "/v2/message-subscriptions/search",
            "messageSubscriptionKey",
            "subscription",
        ),
    ] {
        let reply = gateway.post(path, json!({})).await;
        assert_eq!(reply.status, 200, "{path}: {:?}", reply.body);
        for item in reply.body["items"].as_array().unwrap() {
            by_kind
                .entry(kind)
                .or_default()
                .push(item[field].as_str().unwrap().to_owned());
            for text in ["elementId", "name", "value", "processDefinitionId", "type"] {
                if let Some(t) = item[text].as_str()
                    && !texts.iter().any(|known| known == t)
                {
                    texts.push(t.to_owned());
                }
            }
        }
    }
    assert!(by_kind["processInstance"].contains(&populated.failing));
    assert!(by_kind.get("incident").is_some_and(|keys| !keys.is_empty()));
    Known { by_kind, texts }
}

fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() > 300 {
        format!(
            "{}… ({} bytes)",
            &text[..text.floor_char_boundary(300)],
            bytes.len()
        )
    } else {
        text.into_owned()
    }
}

/// Random cases per search operation, and per get (after the sweep).
const SEARCH_CASES: usize = 400;
const GET_CASES: usize = 120;

/// Sends cases, judges the answers, and keeps the tally.
struct Run<'a> {
    gateway: &'a TestGateway,
    cursors: Cursors,
    counts: BTreeMap<&'static str, BTreeMap<u16, usize>>,
    failures: Vec<String>,
    sent: usize,
}

impl Run<'_> {
    /// The answer's JSON when it is a 200 (its cursors kept for the case's slot).
    async fn run(&mut self, op: &Operation, case: &Case) -> Option<Value> {
        let answer = send(self.gateway, case).await;
        self.sent += 1;
        *self
            .counts
            .entry(op.name)
            .or_default()
            .entry(answer.status)
            .or_default() += 1;
        let found = judge(op, case, &answer);
        if !found.is_empty() {
            self.failures.push(format!(
                "seed {SEED:#x}, request {}: {} {}\n  body: {}\n  answer {}: {}\n  {}",
                self.sent,
                case.method,
                case.path,
                case.body.as_deref().map(show).unwrap_or_default(),
                answer.status,
                show(&answer.bytes),
                found.join("\n  ")
            ));
            return None;
        }
        if answer.status != 200 || op.schema.is_none() {
            return None;
        }
        let body: Value = serde_json::from_slice(&answer.bytes).ok()?;
        if let (Some(slot), Expect::Ok) = (&case.cursor_slot, case.expect) {
            self.cursors.keep(slot, &body);
        }
        Some(body)
    }
}

/// The path of `op` with a key of the kind it takes (the failing instance for its
/// incidents, so their pages have items).
fn known_path(op: &Operation, known: &Known, populated: &Populated) -> String {
    let key = match path_kind(op) {
        "processInstance" => populated.failing.clone(),
        "processDefinition" => populated.definition.clone(),
        kind => known.keys(kind)[0].clone(),
    };
    op.path.replace("{key}", &key)
}

fn post(path: &str, body: &Value, expect: Expect, slot: Option<String>) -> Case {
    Case {
        method: Method::POST,
        path: path.to_owned(),
        body: Some(serde_json::to_vec(body).unwrap()),
        expect,
        cursor_slot: slot,
    }
}

/// Every operator of every filter field with a right and a wrong value, and every sort
/// field in both orders, walked forwards and backwards by its cursors.
async fn sweep(run: &mut Run<'_>, rng: &mut Rng, op: &Operation, path: &str, known: &Known) {
    for (name, kind) in op.fields {
        let mut conditions: Vec<(Value, Value)> = vec![(
            json!({ *name: right(rng, *kind, known) }),
            json!({ *name: wrong(rng, *kind) }),
        )];
        for operator in operators(*kind) {
            let (good, bad) = match *operator {
                "$in" | "$notIn" => (
                    json!([right(rng, *kind, known), right(rng, *kind, known)]),
                    json!([right(rng, *kind, known), wrong(rng, *kind)]),
                ),
                "$exists" => (json!(rng.chance(50)), json!("yes")),
                "$like" => (json!("*a?*"), json!(5)),
                _ => (right(rng, *kind, known), wrong(rng, *kind)),
            };
            conditions.push((
                json!({ *name: { *operator: good } }),
                json!({ *name: { *operator: bad } }),
            ));
        }
        for (good, bad) in conditions {
            run.run(
                op,
                &post(path, &json!({ "filter": good }), Expect::Ok, None),
            )
            .await;
            run.run(
                op,
                &post(path, &json!({ "filter": bad }), Expect::Bad, None),
            )
            .await;
        }
    }
    if !op.paged {
        return;
    }
    for (name, _) in op.fields.iter().filter(|(n, _)| !op.unsorted.contains(n)) {
        for order in ["ASC", "DESC"] {
            let sort = json!([{ "field": name, "order": order }]);
            let slot = format!("{} {sort}", op.name);
            let body = json!({ "sort": sort, "page": { "limit": 1 } });
            let Some(first) = run
                .run(op, &post(path, &body, Expect::Ok, Some(slot.clone())))
                .await
            else {
                continue;
            };
            // One step forwards, and back again.
            let end = first["page"]["endCursor"].clone();
            let body = json!({ "sort": sort, "page": { "limit": 1, "after": end } });
            let Some(next) = run
                .run(op, &post(path, &body, Expect::Ok, Some(slot.clone())))
                .await
            else {
                continue;
            };
            let start = next["page"]["startCursor"].clone();
            let body = json!({ "sort": sort, "page": { "limit": 1, "before": start } });
            if let Some(back) = run
                .run(op, &post(path, &body, Expect::Ok, Some(slot)))
                .await
                && !next["items"].as_array().is_none_or(Vec::is_empty)
            {
                assert_eq!(
                    back["items"], first["items"],
                    "{} sorted by {sort}",
                    op.name
                );
            }
        }
    }
}

#[tokio::test]
async fn generated_requests_get_no_5xx_and_answers_in_the_spec_shape() {
    let (gateway, populated) = populated().await;
    let known = known(&gateway, &populated).await;
    let mut rng = Rng(SEED);
    let mut run = Run {
        gateway: &gateway,
        cursors: Cursors::default(),
        counts: BTreeMap::new(),
        failures: Vec::new(),
        sent: 0,
    };
    let ops = operations();
    for op in ops.iter().filter(|op| op.method == Method::POST) {
        let path = known_path(op, &known, &populated);
        sweep(&mut run, &mut rng, op, &path, &known).await;
    }
    // Rounds over the operations, so cursors of every operation are about early.
    for round in 0..SEARCH_CASES {
        for op in &ops {
            if op.method == Method::GET && round >= GET_CASES {
                continue;
            }
            let (path, path_expect) = if op.path.contains("{key}") {
                let (key, mut expect) = path_key(&mut rng, path_kind(op), &known);
                if expect == Expect::Missing && !op.client_errors.contains(&404) {
                    expect = Expect::Ok;
                }
                (op.path.replace("{key}", &key), expect)
            } else {
                (op.path.to_owned(), Expect::Ok)
            };
            let case = if op.method == Method::GET {
                Case {
                    method: Method::GET,
                    path,
                    body: None,
                    expect: path_expect,
                    cursor_slot: None,
                }
            } else {
                let (body, expect, slot) = if rng.chance(12) {
                    let (raw, expect) = raw_body(&mut rng);
                    (raw, expect, None)
                } else {
                    let (body, expect, slot) = search_body(&mut rng, op, &known, &run.cursors);
                    (serde_json::to_vec(&body).unwrap(), expect, slot)
                };
                let mut path = path;
                if op.name == "searchVariables" && rng.chance(20) {
                    let query = rng.pick(&[
                        "?truncateValues=true",
                        "?truncateValues=false",
                        "?truncateValues=maybe",
                    ]);
                    path.push_str(query);
                }
                let expect = if path.ends_with("maybe") {
                    Expect::Bad
                } else {
                    expect
                };
                Case {
                    method: op.method.clone(),
                    path,
                    body: Some(body),
                    expect: both(path_expect, expect),
                    cursor_slot: slot,
                }
            };
            run.run(op, &case).await;
        }
    }
    for (name, by_status) in &run.counts {
        println!("{name}: {by_status:?}");
    }
    let sent = run.sent;
    println!("{sent} generated requests, seed {SEED:#x}");
    assert!(
        run.failures.is_empty(),
        "{} of {sent} generated requests failed:\n{}",
        run.failures.len(),
        run.failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The generator reached what it is meant to: pages, cursors, 400s and 404s.
    assert!(
        run.cursors.by_slot.len() > 50,
        "{:?}",
        run.cursors.by_slot.keys()
    );
    for op in &ops {
        let by_status = &run.counts[op.name];
        assert!(
            by_status.get(&200).copied().unwrap_or(0) > 5,
            "{}: {by_status:?}",
            op.name
        );
        assert!(
            by_status.get(&400).copied().unwrap_or(0) > 5,
            "{}: {by_status:?}",
            op.name
        );
        if op.client_errors.contains(&404) {
            assert!(
                by_status.get(&404).copied().unwrap_or(0) > 2,
                "{}: {by_status:?}",
                op.name
            );
        }
    }
    assert_eq!(
        gateway.get("/v2/topology").await.status,
        200,
        "still serving"
    );
    gateway.stop().await;
}
