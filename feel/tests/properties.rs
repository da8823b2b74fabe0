//! Property tests: arithmetic is exact, JSON passes through unchanged (key order
//! included), ISO values round-trip, sorting by any FEEL function gives a permutation,
//! the range functions agree with `in` and with their converses, and no input makes
//! compile or evaluate panic.

use proptest::prelude::*;
use rill_feel::{Expression, temporal};
use serde_json::{Map, Value as Json, json};

const NOW: i64 = 1_796_032_800_000;

fn eval(source: &str, vars: &Map<String, Json>) -> Result<Json, rill_feel::FeelError> {
    Expression::compile(source).and_then(|e| e.evaluate(vars, NOW))
}

fn one(name: &str, value: Json) -> Map<String, Json> {
    let mut map = Map::new();
    map.insert(name.to_owned(), value);
    map
}

/// JSON values FEEL holds exactly: integers, short decimals, strings, nested values.
fn json_value() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::from),
        any::<i64>().prop_map(Json::from),
        (-1_000_000i64..1_000_000, 1u32..4).prop_map(|(units, scale)| {
            let text = format!("{}", units as f64 / 10f64.powi(scale as i32));
            serde_json::from_str(&text).unwrap_or(Json::Null)
        }),
        "[a-zA-Z0-9 _\\-éü€]{0,12}".prop_map(Json::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::from),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..4).prop_map(|entries| {
                let mut map = Map::new();
                for (key, value) in entries {
                    map.insert(key, value);
                }
                Json::Object(map)
            }),
        ]
    })
}

/// A range literal such as `(2..7]` from its ends and whether each is included.
fn range_text((start, start_closed, end, end_closed): (i64, bool, i64, bool)) -> String {
    format!(
        "{}{start}..{end}{}",
        if start_closed { "[" } else { "(" },
        if end_closed { "]" } else { ")" }
    )
}

fn range() -> impl Strategy<Value = (i64, bool, i64, bool)> {
    (0i64..6, any::<bool>(), 0i64..6, any::<bool>())
        .prop_map(|(a, a_closed, b, b_closed)| (a.min(b), a_closed, a.max(b), b_closed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sorting_by_any_function_gives_a_permutation(
        items in prop::collection::vec(-5i64..5, 0..40),
        body in prop::sample::select(vec![
            "x < y", "x > y", "true", "false", "null", "modulo(x + y, 3) = 0", "x <= y",
            "if x = y then null else x < y",
        ]),
    ) {
        let vars = one("items", json!(items));
        let sorted = eval(&format!("sort(items, function(x, y) {body})"), &vars);
        let Ok(Json::Array(sorted)) = sorted else {
            return Err(TestCaseError::fail(format!("{body}: {sorted:?}")));
        };
        let mut expected: Vec<i64> = items.clone();
        expected.sort();
        let mut actual: Vec<i64> = sorted.iter().filter_map(Json::as_i64).collect();
        if body == "x < y" || body == "x <= y" {
            prop_assert_eq!(&actual, &expected);
        }
        actual.sort();
        prop_assert_eq!(actual, expected);
    }

    #[test]
    fn range_functions_agree_with_in_and_their_converses(
        point in 0i64..6,
        first in range(),
        second in range(),
    ) {
        let (r1, r2) = (range_text(first), range_text(second));
        let vars = Map::new();
        let truth = |source: String| eval(&source, &vars);
        // The DMN text's definitions treat an empty range such as [1..1) as holding its
        // closed end, where `in` finds nothing: compare proper ranges only.
        if first.0 < first.2 {
            prop_assert_eq!(truth(format!("during({point}, {r1})")), truth(format!("{point} in {r1}")));
        }
        prop_assert_eq!(truth(format!("includes({r1}, {point})")), truth(format!("during({point}, {r1})")));
        for (relation, converse) in [
            ("before", "after"),
            ("meets", "met by"),
            ("overlaps before", "overlaps after"),
            ("finishes", "finished by"),
            ("during", "includes"),
            ("starts", "started by"),
            ("overlaps", "overlaps"),
            ("coincides", "coincides"),
        ] {
            prop_assert_eq!(
                truth(format!("{relation}({r1}, {r2})")),
                truth(format!("{converse}({r2}, {r1})")),
                "{}({}, {})", relation, r1, r2
            );
        }
        // A point before a range is not in it, and neither is one after it.
        if first.0 < first.2
            && truth(format!("before({point}, {r1}) or after({point}, {r1})")) == Ok(json!(true))
        {
            prop_assert_eq!(truth(format!("{point} in {r1}")), Ok(json!(false)));
        }
    }

    #[test]
    fn integer_arithmetic_is_exact(a in -(1i64 << 52)..(1i64 << 52), b in -(1i64 << 52)..(1i64 << 52)) {
        let mut vars = one("a", json!(a));
        vars.insert("b".to_owned(), json!(b));
        prop_assert_eq!(eval("a + b", &vars), Ok(json!(a + b)));
        prop_assert_eq!(eval("a - b", &vars), Ok(json!(a - b)));
        prop_assert_eq!(eval("a < b", &vars), Ok(json!(a < b)));
        prop_assert_eq!(eval("a = b", &vars), Ok(json!(a == b)));
        prop_assert_eq!(eval("max(a, b)", &vars), Ok(json!(a.max(b))));
    }

    #[test]
    fn decimal_sums_do_not_drift(cents in prop::collection::vec(0i64..100_000, 1..20)) {
        // Amounts in cents as decimals: the sum equals the integer sum / 100 exactly.
        let amounts: Vec<Json> = cents
            .iter()
            .map(|c| serde_json::from_str(&format!("{}.{:02}", c / 100, c % 100)).unwrap_or(Json::Null))
            .collect();
        let total: i64 = cents.iter().sum();
        let vars = one("amounts", Json::from(amounts));
        let expected = format!("{}.{:02}", total / 100, total % 100);
        let result = eval(&format!("sum(amounts) = {expected}"), &vars);
        prop_assert_eq!(result, Ok(json!(true)));
    }

    #[test]
    fn json_variables_pass_through_unchanged(value in json_value()) {
        let vars = one("v", value.clone());
        let result = eval("v", &vars);
        prop_assert_eq!(
            result.as_ref().ok().and_then(|r| serde_json::to_string(r).ok()),
            serde_json::to_string(&value).ok()
        );
        // A context built around it keeps the entry order too.
        let wrapped = eval("{z: v, a: 1}", &vars);
        prop_assert_eq!(wrapped, Ok(json!({"z": value, "a": 1})));
    }

    #[test]
    fn durations_round_trip(days in 0i64..400, hours in 0i64..24, minutes in 0i64..60, millis in 0i64..60_000) {
        let total = ((days * 24 + hours) * 60 + minutes) * 60_000 + millis;
        let source = format!("duration(\"PT{}S\") * 1", total as f64 / 1000.0);
        let text = eval(&source, &Map::new());
        let Ok(Json::String(text)) = text else {
            return Err(TestCaseError::fail(format!("{source}: {text:?}")));
        };
        prop_assert_eq!(temporal::parse_duration(&text).map(|d| d.millis), Ok(total), "{}", text);
    }

    #[test]
    fn date_times_round_trip(instant in -2_000_000_000_000i64..8_000_000_000_000, offset_minutes in -14 * 60i64..14 * 60) {
        let vars = one("minutes", json!(offset_minutes));
        let now = Expression::compile("now() + duration(\"PT0S\")")
            .and_then(|e| e.evaluate(&vars, instant));
        let Ok(Json::String(text)) = now else {
            return Err(TestCaseError::fail(format!("{now:?}")));
        };
        prop_assert_eq!(temporal::parse_date_time(&text), Ok(instant), "{}", text);
        // The same instant seen from another offset is equal.
        let offset = format!(
            "{}{:02}:{:02}",
            if offset_minutes < 0 { '-' } else { '+' },
            offset_minutes.abs() / 60,
            offset_minutes.abs() % 60
        );
        let shifted = instant + offset_minutes * 60_000;
        let local = Expression::compile("string(now())")
            .and_then(|e| e.evaluate(&Map::new(), shifted));
        let Ok(Json::String(local)) = local else {
            return Err(TestCaseError::fail(format!("{local:?}")));
        };
        let with_offset = format!("{}{offset}", local.trim_end_matches('Z'));
        prop_assert_eq!(temporal::parse_date_time(&with_offset), Ok(instant), "{}", with_offset);
    }

    #[test]
    fn calendar_months_match_day_clamping(year in 1900i64..2200, month in 1u32..=12, day in 1u32..=28, add in -36i64..36) {
        let start = format!("{year:04}-{month:02}-{day:02}T12:00:00Z");
        let Ok(start_millis) = temporal::parse_date_time(&start) else {
            return Err(TestCaseError::fail(start));
        };
        let moved = temporal::add_duration(start_millis, temporal::IsoDuration { months: add, millis: 0 });
        // Days 1..=28 exist in every month, so the day of month is kept.
        let total = year * 12 + i64::from(month) - 1 + add;
        let expected = format!("{:04}-{:02}-{day:02}T12:00:00Z", total.div_euclid(12), total.rem_euclid(12) + 1);
        prop_assert_eq!(temporal::parse_date_time(&expected), Ok(moved));
    }

    #[test]
    fn arbitrary_text_never_panics(source in "\\PC{0,40}") {
        if let Ok(expression) = Expression::compile(&source) {
            let _ = expression.evaluate(&one("x", json!(1)), NOW);
        }
        let _ = temporal::parse_duration(&source);
        let _ = temporal::parse_date_time(&source);
        let _ = temporal::parse_cycle(&source);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(prop::sample::select(vec![
        "x", "order", ".", "total", "items", "item", "(", ")", "[", "]", "{", "}", ",", ":", "..",
        "+", "-", "*", "/", "**", "=", "!=", "<", ">=", "and", "or", "not(", "if", "then", "else",
        "for", "in", "return", "some", "every", "satisfies", "between", "instance of", "number",
        "1", "0", "-1", "2.5", "\"a\"", "null", "true", "date(\"2026-01-31\")", "now()",
        "duration(\"P1M\")", "duration(\"PT1H\")", "date and time(\"2026-03-29T02:30:00@Europe/Berlin\")",
        "sum(", "count(", "substring(", "string join(", "sort(", "flatten(", "time(\"10:00:00\")",
        "insert before(", "remove(", "sublist(", "index of(", "partition(", "modulo(", "decimal(",
        "round up(", "date(", "time(", "date and time(", "years and months duration(", "split(",
        "replace(", "matches(", "[1, 2]", "3", "-3", "100000", "\"\"", "\"P1Y\"", "\".*\"",
        "min(", "max(", "median(", "get value(", "context put(", "string(", "number(", "abs(",
        "function(", "function(a, b)", "f(", "g", "a", "b", ":", "@\"2025-01-01\"", "@\"P1D\"",
        "@\"10:00:00\"", "before(", "overlaps before(", "during(", "coincides(", "mode(",
        "stddev(", "to base64(", "uuid()", "random number()", "and(", "or(", "put all(",
        "start position:", "precedes:", "[\"a\", \"b\"]", "date and time(\"2026-01-31T10:00:00Z\", \"Z\")",
    ]), 0..16)) {
        let source = tokens.join(" ");
        let vars = serde_json::from_str::<Map<String, Json>>(
            r#"{"x": 5, "order": {"total": 10, "items": [{"total": 1}, 2, null]}}"#,
        ).unwrap_or_default();
        if let Ok(expression) = Expression::compile(&source) {
            let _ = expression.evaluate(&vars, NOW);
            let _ = expression.evaluate_condition(&vars, NOW);
        }
    }
}
