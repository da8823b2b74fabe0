//! Table-driven tests: (expression, variables, expected JSON or expected error).
//! `now()` is 2026-11-30T10:00:00Z unless a case says otherwise.

use rill_feel::{Expression, FeelError};
use serde_json::{Map, Value as Json};

const NOW: i64 = 1_796_032_800_000; // 2026-11-30T10:00:00Z

/// The variables most cases read, shaped like the sample order model's.
const ORDER: &str = r#"{
    "order": {
        "id": "o-1",
        "total": 1250.5,
        "customer": {"id": "c-9", "name": "Ada Lovelace", "vip": true},
        "items": [
            {"sku": "a-1", "qty": 2, "price": 10},
            {"sku": "b-2", "qty": 1, "price": 99.99},
            {"sku": "c-3", "qty": 5, "price": 1.5}
        ],
        "placed": "2026-11-28T09:30:00Z",
        "note": null
    },
    "x": 5,
    "y": 2.5,
    "big": 9007199254740993,
    "name": "Ada",
    "flag": false,
    "tags": ["rush", "gift"],
    "numbers": [3, 1, 4, 1, 5, 9, 2, 6],
    "amount": 0.1,
    "empty": [],
    "nothing": null
}"#;

enum Expect {
    /// The JSON result, written as JSON text.
    Json(&'static str),
    /// A compile error whose reason contains the text.
    Syntax(&'static str),
    /// An evaluation error whose reason contains the text.
    Failure(&'static str),
}

use Expect::{Failure, Json as J, Syntax};

fn variables(text: &str) -> Map<String, Json> {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad test variables: {e}"))
}

fn check(cases: &[(&str, Expect)], vars: &str, now: i64) {
    let vars = variables(vars);
    let mut failures = Vec::new();
    for (source, expected) in cases {
        let outcome = Expression::compile(source).and_then(|e| e.evaluate(&vars, now));
        let ok = match (expected, &outcome) {
            (J(text), Ok(actual)) => {
                let wanted: Json = serde_json::from_str(text)
                    .unwrap_or_else(|e| panic!("bad expected JSON for {source}: {e}"));
                // Compare the text too, so 3 and 3.0 are told apart.
                *actual == wanted
                    && serde_json::to_string(actual).ok() == serde_json::to_string(&wanted).ok()
            }
            (Syntax(part), Err(FeelError::Syntax { reason, .. })) => reason.contains(part),
            (Failure(part), Err(FeelError::Evaluation { reason, .. })) => reason.contains(part),
            _ => false,
        };
        if !ok {
            let wanted = match expected {
                J(text) => format!("Ok({text})"),
                Syntax(part) => format!("syntax error containing {part:?}"),
                Failure(part) => format!("evaluation error containing {part:?}"),
            };
            failures.push(format!(
                "  {source}\n    expected {wanted}\n    got      {outcome:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn literals_and_paths() {
    check(
        &[
            ("1", J("1")),
            ("1.5", J("1.5")),
            ("-3", J("-3")),
            (".5", J("0.5")),
            ("1e3", J("1000")),
            ("\"text\"", J("\"text\"")),
            ("\"quote \\\" and \\u00e9\"", J("\"quote \\\" and é\"")),
            ("true", J("true")),
            ("null", J("null")),
            ("order.id", J("\"o-1\"")),
            ("order.customer.id", J("\"c-9\"")),
            ("order.total", J("1250.5")),
            ("order.items[1].sku", J("\"a-1\"")),
            ("order.items.sku", J("[\"a-1\",\"b-2\",\"c-3\"]")),
            ("order.note", J("null")),
            ("big", J("9007199254740993")),
            ("18446744073709551615", J("18446744073709551615")),
            ("18446744073709551616", J("18446744073709552000")),
            ("x", J("5")),
            ("`x`", J("5")),
            ("(x)", J("5")),
            ("{a: 1}.a", J("1")),
            ("{\"key with space\": 1}", J("{\"key with space\":1}")),
            ("{first name: \"Ada\"}", J("{\"first name\":\"Ada\"}")),
            ("[1, \"a\", null, [true]]", J("[1,\"a\",null,[true]]")),
            ("[]", J("[]")),
            ("{}", J("{}")),
            ("// comment\n x /* inline */ + 1", J("6")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn missing_values_are_null_as_in_camunda() {
    check(
        &[
            ("missing", J("null")),
            ("missing.deeper.still", J("null")),
            ("order.missing", J("null")),
            ("order.customer.missing.id", J("null")),
            ("nothing.field", J("null")),
            ("missing + 1", J("null")),
            ("missing > 3", J("null")),
            ("3 <= missing", J("null")),
            ("missing = null", J("true")),
            ("missing != null", J("false")),
            ("x = null", J("false")),
            ("null = null", J("true")),
            ("order.note = null", J("true")),
            ("is defined(missing)", J("false")),
            ("is defined(x)", J("true")),
            ("is defined(order.note)", J("true")),
            ("is defined(order.nope)", J("false")),
            ("get or else(missing, \"default\")", J("\"default\"")),
            ("get or else(name, \"default\")", J("\"Ada\"")),
            ("assert(x, x > 3)", J("5")),
            (
                "assert(x, x > 9, \"x must be above 9\")",
                Failure("x must be above 9"),
            ),
            (
                "assert(missing, missing != null)",
                Failure("the assertion failed for null"),
            ),
            ("missing[1]", J("null")),
            ("x.field", J("null")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn comparisons() {
    check(
        &[
            ("order.total > 1000", J("true")),
            ("order.total < 1000", J("false")),
            ("x >= 5", J("true")),
            ("x <= 4", J("false")),
            ("x = 5", J("true")),
            ("x != 5", J("false")),
            ("x = 5.0", J("true")),
            ("name = \"Ada\"", J("true")),
            ("name != \"Bob\"", J("true")),
            ("name < \"Bob\"", J("true")),
            ("flag = false", J("true")),
            ("tags = [\"rush\", \"gift\"]", J("true")),
            ("{a: 1, b: 2} = {b: 2, a: 1}", J("true")),
            ("date(\"2026-01-02\") > date(\"2026-01-01\")", J("true")),
            ("duration(\"PT1H\") < duration(\"PT61M\")", J("true")),
            (
                "date and time(\"2026-11-30T11:00:00+01:00\") = date and time(\"2026-11-30T10:00:00Z\")",
                J("true"),
            ),
            ("x between 1 and 10", J("true")),
            ("x between 6 and 10", J("false")),
            (
                "order.total > \"1000\"",
                Failure("can't compare number 1250.5 with string \"1000\""),
            ),
            (
                "x = \"5\"",
                Failure("can't compare number 5 with string \"5\""),
            ),
            (
                "true < false",
                Failure("can't compare boolean true with boolean false"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn arithmetic() {
    check(
        &[
            ("x + 1", J("6")),
            ("x - 7", J("-2")),
            ("x * y", J("12.5")),
            ("x / 2", J("2.5")),
            ("x / 5", J("1")),
            ("10 / 4", J("2.5")),
            ("1 / 3 * 3", J("1")),
            ("2 ** 10", J("1024")),
            ("2 ** -1", J("0.5")),
            ("-x", J("-5")),
            ("- -x", J("5")),
            ("1 + 2 * 3", J("7")),
            ("(1 + 2) * 3", J("9")),
            ("amount + 0.2", J("0.3")),
            ("amount + 0.2 = 0.3", J("true")),
            ("0.1 * 3", J("0.3")),
            ("1.10 + 1.20", J("2.3")),
            ("order.total * 2", J("2501")),
            (
                "sum(for i in order.items return i.qty * i.price)",
                J("127.49"),
            ),
            ("\"a\" + \"b\"", J("\"ab\"")),
            ("name + \" \" + \"Lovelace\"", J("\"Ada Lovelace\"")),
            ("\"total: \" + string(order.total)", J("\"total: 1250.5\"")),
            ("\"a\" + 1", Failure("can't add string \"a\" and number 1")),
            (
                "x - \"1\"",
                Failure("can't subtract string \"1\" from number 5"),
            ),
            ("[1] * 2", Failure("can't multiply list and number 2")),
            ("1 / 0", Failure("division by zero")),
            ("99999999999999999999999999999 * 10", Syntax("out of range")),
            ("79228162514264337593543950335 * 10", Failure("too large")),
            ("-true", Failure("can't negate boolean true")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn logic_and_conditionals() {
    check(
        &[
            ("x > 3 and name = \"Ada\"", J("true")),
            ("x > 3 and flag", J("false")),
            ("x > 9 or flag", J("false")),
            ("x > 9 or order.customer.vip", J("true")),
            ("not(flag)", J("true")),
            ("not(x > 3)", J("false")),
            ("not(missing)", J("null")),
            // Three-valued logic: false wins in `and`, true wins in `or`.
            ("missing > 1 and false", J("false")),
            ("missing > 1 and true", J("null")),
            ("missing > 1 or true", J("true")),
            ("missing > 1 or false", J("null")),
            ("if x > 3 then \"big\" else \"small\"", J("\"big\"")),
            ("if missing then 1 else 2", J("2")),
            (
                "if x > 3 then if x > 4 then \"huge\" else \"big\" else \"small\"",
                J("\"huge\""),
            ),
            ("1 + (if flag then 1 else 2)", J("3")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn in_ranges_and_lists() {
    check(
        &[
            ("x in [1..10]", J("true")),
            ("x in [1..5]", J("true")),
            ("x in [1..5)", J("false")),
            ("x in (5..10]", J("false")),
            ("x in ]5..10]", J("false")),
            // `[` after a range's end excludes the end; a filter there still filters.
            ("x in [1..5[", J("false")),
            ("x in ]4..6[", J("true")),
            ("x in [1..x[", J("false")),
            ("x in [1..5[ or x = 5", J("true")),
            ("[1..10[ = [1..10)", J("true")),
            ("[[1..5[, [5..9]][2].start", J("5")),
            ("x in [1..[7, 8][1]]", J("true")),
            ("x in [1..[7, 4][-1]]", J("false")),
            (
                "date(\"2026-06-01\") in [date(\"2026-01-01\")..date(\"2026-06-01\")[",
                J("false"),
            ),
            ("x in [6..10]", J("false")),
            ("x in (1, 5, 7)", J("true")),
            ("x in (1, 2)", J("false")),
            ("x in [1, 5, 7]", J("true")),
            ("x in > 3", J("true")),
            ("x in (< 3, > 4)", J("true")),
            ("name in (\"Ada\", \"Bob\")", J("true")),
            ("name in (1, \"Ada\")", J("true")),
            ("x in (\"a\", 5)", J("true")),
            ("x in [\"a\", \"b\"]", J("false")),
            (
                "name in < 3",
                Failure("can't compare string \"Ada\" with number 3"),
            ),
            ("\"gift\" in tags", J("true")),
            (
                "date(\"2026-06-01\") in [date(\"2026-01-01\")..date(\"2026-12-31\")]",
                J("true"),
            ),
            ("missing in [1..10]", J("null")),
            ("[1..10].start", J("1")),
            ("[1..10]", Failure("has no JSON form")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn string_functions() {
    check(
        &[
            ("string length(name)", J("3")),
            ("string length(\"héllo\")", J("5")),
            ("upper case(name)", J("\"ADA\"")),
            ("lower case(\"ABC\")", J("\"abc\"")),
            ("substring(\"foobar\", 3)", J("\"obar\"")),
            ("substring(\"foobar\", 3, 2)", J("\"ob\"")),
            ("substring(\"foobar\", -2, 1)", J("\"a\"")),
            ("substring(\"foobar\", 10)", J("\"\"")),
            ("substring(\"foobar\", 0)", Failure("positions start at 1")),
            ("substring before(\"foobar\", \"bar\")", J("\"foo\"")),
            ("substring after(\"foobar\", \"ob\")", J("\"ar\"")),
            ("substring after(\"foobar\", \"zz\")", J("\"\"")),
            ("contains(order.customer.name, \"Love\")", J("true")),
            ("starts with(name, \"A\")", J("true")),
            ("ends with(name, \"x\")", J("false")),
            ("matches(order.id, \"^o-\\\\d+$\")", J("true")),
            ("matches(\"ABC\", \"abc\", \"i\")", J("true")),
            (
                "matches(\"abc\", \"(\")",
                Failure("invalid regular expression"),
            ),
            ("replace(\"abc\", \"b\", \"x\")", J("\"axc\"")),
            (
                "replace(\"2026-11-30\", \"(\\\\d+)-(\\\\d+)-(\\\\d+)\", \"$3.$2.$1\")",
                J("\"30.11.2026\""),
            ),
            ("split(\"a,b,,c\", \",\")", J("[\"a\",\"b\",\"\",\"c\"]")),
            (
                "extract(\"a1b22c333\", \"\\\\d+\")",
                J("[\"1\",\"22\",\"333\"]"),
            ),
            ("trim(\"  x  \")", J("\"x\"")),
            ("string join(tags)", J("\"rushgift\"")),
            ("string join(tags, \", \")", J("\"rush, gift\"")),
            ("string join([\"a\", null, \"b\"], \"-\")", J("\"a-b\"")),
            (
                "string join(tags, \", \", \"[\", \"]\")",
                J("\"[rush, gift]\""),
            ),
            ("is blank(\" \")", J("true")),
            ("string(1.50)", J("\"1.5\"")),
            ("string(x)", J("\"5\"")),
            ("string(true)", J("\"true\"")),
            ("string(null)", J("null")),
            ("string(date(\"2026-11-30\"))", J("\"2026-11-30\"")),
            ("string([1, \"a\"])", J("\"[1, \\\"a\\\"]\"")),
            (
                "upper case(x)",
                Failure("upper case() expects a string, but got number 5"),
            ),
            ("upper case(missing)", J("null")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn number_functions() {
    check(
        &[
            ("number(\"12.50\")", J("12.5")),
            ("number(\"-3\")", J("-3")),
            ("number(\"1e2\")", J("100")),
            ("number(\"abc\")", Failure("\"abc\" is not a number")),
            ("decimal(1/3, 2)", J("0.33")),
            ("decimal(2.5, 0)", J("2")),
            ("decimal(3.5, 0)", J("4")),
            ("floor(1.5)", J("1")),
            ("floor(-1.5)", J("-2")),
            ("floor(1.56, 1)", J("1.5")),
            ("ceiling(1.2)", J("2")),
            ("ceiling(-1.5)", J("-1")),
            ("round up(5.5, 0)", J("6")),
            ("round up(-5.5, 0)", J("-6")),
            ("round down(5.5, 0)", J("5")),
            ("round half up(5.5, 0)", J("6")),
            ("round half down(5.5, 0)", J("5")),
            ("round half up(1.125, 2)", J("1.13")),
            ("abs(-3)", J("3")),
            ("abs(duration(\"-PT5M\"))", J("\"PT5M\"")),
            ("modulo(10, 3)", J("1")),
            ("modulo(-5, 3)", J("1")),
            ("modulo(5, -3)", J("-1")),
            ("modulo(5, 0)", Failure("division by zero")),
            ("sqrt(16)", J("4")),
            ("sqrt(-1)", Failure("is negative")),
            ("exp(0)", J("1")),
            ("log(1)", J("0")),
            ("log(0)", Failure("is not positive")),
            ("odd(5)", J("true")),
            ("even(5)", J("false")),
            ("even(2.5)", Failure("is not an integer")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn list_functions() {
    check(
        &[
            ("count(numbers)", J("8")),
            ("count(empty)", J("0")),
            ("min(numbers)", J("1")),
            ("max(numbers)", J("9")),
            ("max(1, 7, 3)", J("7")),
            ("min([])", J("null")),
            ("max([\"b\", \"a\"])", J("\"b\"")),
            ("max([1, \"a\"])", Failure("can't compare")),
            ("sum(numbers)", J("31")),
            ("sum([])", J("null")),
            ("sum([1, null])", J("null")),
            ("sum([1, \"a\"])", Failure("sum() expects numbers")),
            ("mean([1, 2, 3, 4])", J("2.5")),
            ("median(numbers)", J("3.5")),
            ("median([3, 1, 2])", J("2")),
            ("product([2, 3, 4])", J("24")),
            ("all([true, true])", J("true")),
            ("all([true, false])", J("false")),
            ("all([true, null])", J("null")),
            ("all([])", J("true")),
            ("any([false, true])", J("true")),
            ("any([])", J("false")),
            ("list contains(tags, \"gift\")", J("true")),
            ("list contains(numbers, 7)", J("false")),
            ("sublist(numbers, 2, 3)", J("[1,4,1]")),
            ("sublist(numbers, -2)", J("[2,6]")),
            ("append(tags, \"new\")", J("[\"rush\",\"gift\",\"new\"]")),
            ("concatenate([1], [2, 3], [])", J("[1,2,3]")),
            ("insert before([1, 3], 2, 2)", J("[1,2,3]")),
            ("insert before([1, 3], -1, 2)", J("[1,2,3]")),
            ("insert before([1], 2, 0)", J("[1,0]")),
            (
                "insert before([1], 3, 0)",
                Failure("position 3 is outside the list"),
            ),
            (
                "insert before([1], -3, 0)",
                Failure("position -3 is outside the list"),
            ),
            ("remove([1, 2, 3], 2)", J("[1,3]")),
            ("remove([1, 2, 3], 4)", Failure("outside the list")),
            ("reverse([1, 2, 3])", J("[3,2,1]")),
            ("index of(numbers, 1)", J("[2,4]")),
            ("union([1, 2], [2, 3])", J("[1,2,3]")),
            ("distinct values(numbers)", J("[3,1,4,5,9,2,6]")),
            ("duplicate values(numbers)", J("[1]")),
            ("flatten([[1, [2]], 3])", J("[1,2,3]")),
            ("is empty(empty)", J("true")),
            ("sort(numbers)", J("[1,1,2,3,4,5,6,9]")),
            ("sort([\"b\", \"a\"])", J("[\"a\",\"b\"]")),
            ("partition([1, 2, 3, 4, 5], 2)", J("[[1,2],[3,4],[5]]")),
            ("partition([1], 0)", Failure("not positive")),
            (
                "count(x)",
                Failure("count() expects a list, but got number 5"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn filters_iteration_and_quantifiers() {
    check(
        &[
            ("numbers[item > 4]", J("[5,9,6]")),
            ("numbers[1]", J("3")),
            ("numbers[-1]", J("6")),
            ("numbers[0]", J("null")),
            ("numbers[100]", J("null")),
            ("numbers[x]", J("5")),
            ("order.items[qty > 1].sku", J("[\"a-1\",\"c-3\"]")),
            ("order.items[price > 50 and qty = 1][1].sku", J("\"b-2\"")),
            ("order.items[item.qty >= 5].sku", J("[\"c-3\"]")),
            ("count(order.items[price < 0])", J("0")),
            ("for i in 1..3 return i * 2", J("[2,4,6]")),
            ("for i in 3..1 return i", J("[3,2,1]")),
            (
                "for i in [1, 2], j in [10, 20] return i + j",
                J("[11,21,12,22]"),
            ),
            (
                "for item in order.items return item.sku",
                J("[\"a-1\",\"b-2\",\"c-3\"]"),
            ),
            (
                "for t in tags return upper case(t)",
                J("[\"RUSH\",\"GIFT\"]"),
            ),
            ("for i in empty return i", J("[]")),
            ("some i in order.items satisfies i.price > 50", J("true")),
            ("some n in numbers satisfies n > 100", J("false")),
            ("every n in numbers satisfies n > 0", J("true")),
            ("every t in tags satisfies string length(t) = 4", J("true")),
            ("every n in empty satisfies n > 0", J("true")),
            ("some a in [1, 2], b in [2, 3] satisfies a = b", J("true")),
            (
                "for i in missing return i",
                Failure("can't iterate over null"),
            ),
            ("for i in 1..2000000 return i", Failure("more than 1000000")),
            (
                "count(for i in 1..1000, j in 1..1000 return 1)",
                Failure("more than 1000000 steps"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn contexts() {
    check(
        &[
            ("{a: 1, b: a + 1}", J("{\"a\":1,\"b\":2}")),
            ("{z: 1, a: 2, m: 3}", J("{\"z\":1,\"a\":2,\"m\":3}")),
            (
                "{total: order.total, vip: order.customer.vip}",
                J("{\"total\":1250.5,\"vip\":true}"),
            ),
            ("{a: {b: [1, {c: 2}]}}.a.b[2].c", J("2")),
            ("get value({a: 1}, \"a\")", J("1")),
            ("get value({a: 1}, \"b\")", J("null")),
            ("get entries({a: 1})", J("[{\"key\":\"a\",\"value\":1}]")),
            ("context put({a: 1}, \"b\", 2)", J("{\"a\":1,\"b\":2}")),
            (
                "context put({a: 1, b: 2}, \"a\", 3)",
                J("{\"a\":3,\"b\":2}"),
            ),
            (
                "context merge([{a: 1}, {b: 2}, {a: 3}])",
                J("{\"a\":3,\"b\":2}"),
            ),
            (
                "order.customer",
                J("{\"id\":\"c-9\",\"name\":\"Ada Lovelace\",\"vip\":true}"),
            ),
            ("{a: 1, a: 2}", Syntax("the key 'a' twice")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn dates_times_and_durations() {
    check(
        &[
            ("now()", J("\"2026-11-30T10:00:00Z\"")),
            ("today()", J("\"2026-11-30\"")),
            (
                "now() + duration(\"PT1H30M\")",
                J("\"2026-11-30T11:30:00Z\""),
            ),
            ("now() - duration(\"P1D\")", J("\"2026-11-29T10:00:00Z\"")),
            ("now() + duration(\"P1M\")", J("\"2026-12-30T10:00:00Z\"")),
            ("today() + duration(\"P2D\")", J("\"2026-12-02\"")),
            (
                "date(\"2026-01-31\") + duration(\"P1M\")",
                J("\"2026-02-28\""),
            ),
            (
                "date(\"2028-02-29\") + duration(\"P1Y\")",
                J("\"2029-02-28\""),
            ),
            ("date(2026, 11, 30)", J("\"2026-11-30\"")),
            ("date(2026, 2, 30)", Failure("not a valid date")),
            ("date(\"2026-13-01\")", Failure("not a valid calendar date")),
            ("date(\"yesterday\")", Failure("not a date")),
            (
                "date(date and time(\"2026-11-30T23:00:00Z\"))",
                J("\"2026-11-30\""),
            ),
            ("time(\"10:30:00\")", J("\"10:30:00\"")),
            ("time(\"10:30:00+02:00\")", J("\"10:30:00+02:00\"")),
            ("time(10, 30, 15)", J("\"10:30:15\"")),
            ("time(\"23:00:00\") + duration(\"PT2H\")", J("\"01:00:00\"")),
            (
                "date and time(\"2026-11-30T10:00:00\")",
                J("\"2026-11-30T10:00:00\""),
            ),
            (
                "date and time(\"2026-11-30T10:00:00.250+01:00\")",
                J("\"2026-11-30T10:00:00.250+01:00\""),
            ),
            (
                "date and time(\"2026-11-30T10:00:00@Europe/Berlin\")",
                J("\"2026-11-30T10:00:00+01:00[Europe/Berlin]\""),
            ),
            (
                "date and time(\"2026-07-01T10:00:00[Europe/Berlin]\")",
                J("\"2026-07-01T10:00:00+02:00[Europe/Berlin]\""),
            ),
            // Adding across the switch to summer time keeps the zone's rules.
            (
                "date and time(\"2026-03-28T12:00:00@Europe/Berlin\") + duration(\"PT24H\")",
                J("\"2026-03-29T13:00:00+02:00[Europe/Berlin]\""),
            ),
            (
                "date and time(\"2026-03-28T12:00:00@Europe/Berlin\") + duration(\"P1M\")",
                J("\"2026-04-28T12:00:00+02:00[Europe/Berlin]\""),
            ),
            (
                "date and time(date(\"2026-11-30\"), time(\"08:00:00Z\"))",
                J("\"2026-11-30T08:00:00Z\""),
            ),
            (
                "date and time(\"2026-11-30T10:00:00[Mars/Base]\")",
                Failure("unknown time zone 'Mars/Base'"),
            ),
            ("date and time(order.placed) < now()", J("true")),
            ("now() - date and time(order.placed)", J("\"P2DT30M\"")),
            ("date(\"2026-03-01\") - date(\"2026-02-01\")", J("\"P28D\"")),
            (
                "years and months duration(date(\"2025-01-15\"), date(\"2026-03-14\"))",
                J("\"P1Y1M\""),
            ),
            ("duration(\"P1DT2H\")", J("\"P1DT2H\"")),
            ("duration(\"PT36H\")", J("\"P1DT12H\"")),
            ("duration(\"PT0.5S\")", J("\"PT0.5S\"")),
            ("duration(\"P1Y2M\")", J("\"P1Y2M\"")),
            ("duration(\"P14M\")", J("\"P1Y2M\"")),
            ("duration(\"P1Y2M\") * 2", J("\"P2Y4M\"")),
            ("duration(\"PT1H\") * 1.5", J("\"PT1H30M\"")),
            ("duration(\"PT1H\") / 4", J("\"PT15M\"")),
            ("duration(\"PT1H\") / duration(\"PT15M\")", J("4")),
            ("duration(\"PT1H\") + duration(\"PT30M\")", J("\"PT1H30M\"")),
            ("-duration(\"PT1H\")", J("\"-PT1H\"")),
            (
                "duration(\"P1Y1D\")",
                Failure("mixes years or months with days or time"),
            ),
            ("duration(\"soon\")", Failure("must start with 'P'")),
            ("date(\"2026-11-30\").year", J("2026")),
            ("date(\"2026-11-30\").month", J("11")),
            ("date(\"2026-11-30\").weekday", J("1")),
            ("now().hour", J("10")),
            (
                "date and time(\"2026-11-30T10:00:00@Europe/Berlin\").timezone",
                J("\"Europe/Berlin\""),
            ),
            (
                "date and time(\"2026-11-30T10:00:00+01:00\").time offset",
                J("\"PT1H\""),
            ),
            ("duration(\"P2DT3H\").days", J("2")),
            ("duration(\"P2DT3H\").hours", J("3")),
            ("duration(\"P1Y2M\").months", J("2")),
            ("day of week(date(\"2026-11-30\"))", J("\"Monday\"")),
            ("day of year(date(\"2026-02-01\"))", J("32")),
            ("month of year(date(\"2026-11-30\"))", J("\"November\"")),
            ("week of year(date(\"2026-01-01\"))", J("1")),
            ("week of year(date(\"2027-01-01\"))", J("53")),
            (
                "last day of month(date(\"2028-02-10\"))",
                J("\"2028-02-29\""),
            ),
            (
                "date and time(\"2026-11-30T10:00:00\") < date and time(\"2026-11-30T10:00:00Z\")",
                Failure("one has a zone and the other has none"),
            ),
            ("now() > date(\"2026-01-01\")", Failure("can't compare")),
            ("now() instance of date and time", J("true")),
            ("today() instance of date", J("true")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn now_comes_from_the_caller() {
    let expression = Expression::compile("now()").unwrap_or_else(|e| panic!("{e}"));
    let vars = Map::new();
    let at = |millis| {
        expression
            .evaluate(&vars, millis)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(at(0), Json::from("1970-01-01T00:00:00Z"));
    assert_eq!(at(NOW + 1_500), Json::from("2026-11-30T10:00:01.500Z"));
    assert_eq!(at(-86_400_000), Json::from("1969-12-31T00:00:00Z"));
    // Far outside the calendar range FEEL supports: an error, not a panic.
    assert!(expression.evaluate(&vars, i64::MAX).is_err());
    assert!(expression.evaluate(&vars, i64::MIN).is_err());
}

#[test]
fn syntax_errors_name_the_problem() {
    check(
        &[
            ("", Syntax("the expression is empty")),
            ("   ", Syntax("the expression is empty")),
            (
                "x +",
                Syntax("expected a value but found the end of the expression at position 3"),
            ),
            ("x y", Syntax("unexpected 'y' at position 2")),
            ("(x", Syntax("expected ')'")),
            ("[1, 2", Syntax("expected ']'")),
            ("{a 1}", Syntax("expected ':'")),
            ("\"open", Syntax("unclosed string")),
            ("x # 1", Syntax("unexpected character '#' at position 2")),
            ("foo(1)", Syntax("no function found with name 'foo'")),
            (
                "substring(\"a\")",
                Syntax("function 'substring' takes 2 to 3 arguments, but 1 were given"),
            ),
            ("now(1)", Syntax("function 'now' takes 0 arguments")),
            ("if x then 1", Syntax("expected 'else'")),
            ("for in [1] return 1", Syntax("expected a variable name")),
            ("some x in [1] satisfies", Syntax("expected a value")),
            (
                "function(a) external {java: {class: \"x\"}}",
                Syntax("external functions (Java or PMML) are not supported"),
            ),
            ("function(a, a) a", Syntax("the parameter 'a' twice")),
            (
                "{f: 1}.g(1) + h(2)",
                Syntax("no function found with name 'h'"),
            ),
            // A context entry is not in scope inside its own value: no direct recursion.
            (
                "{f: function(n) f(n - 1)}",
                Syntax("no function found with name 'f'"),
            ),
            (
                "substring(text: \"a\", start position: 1)",
                Syntax(
                    "function 'substring' has no signature with the parameters (text, start position)",
                ),
            ),
            (
                "substring(string: \"a\")",
                Syntax("has no signature with the parameters (string)"),
            ),
            (
                "substring(\"a\", start position: 1)",
                Syntax("name all arguments or none"),
            ),
            (
                "substring(string: \"a\", 1)",
                Syntax("name all arguments or none"),
            ),
            (
                "substring(string: \"a\", string: \"b\", start position: 1)",
                Syntax("the argument 'string' is given twice"),
            ),
            (
                "concatenate(lists: [[1], [2]])",
                Syntax(
                    "the parameter 'lists' of 'concatenate' takes several values and can't be named",
                ),
            ),
            ("@\"soon\"", Syntax("invalid temporal literal @\"soon\"")),
            ("@\"2025-13-01\"", Syntax("invalid temporal literal")),
            ("@\"P1Y2D\"", Syntax("mixes years or months with days")),
            (
                "@\"10:00@Europe/Berlin\"",
                Syntax("a time can't have a zone id"),
            ),
            ("@ \"2025-01-01\"", Syntax("unexpected character '@'")),
            ("and", Syntax("expected a value but found 'and'")),
            (
                "before(1)",
                Syntax("function 'before' takes 2 arguments, but 1 were given"),
            ),
            ("x instance of thing", Syntax("expected a type name")),
            ("=x", Syntax("expected a value but found '='")),
            ("x.", Syntax("expected a name after '.'")),
            ("[1..", Syntax("expected a value")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn deep_nesting_is_rejected_not_a_stack_overflow() {
    let deep = format!("{}1{}", "(".repeat(5_000), ")".repeat(5_000));
    match Expression::compile(&deep) {
        Err(FeelError::Syntax { reason, .. }) => {
            assert!(reason.contains("nested too deeply"), "{reason}")
        }
        other => panic!("expected a nesting error, got {other:?}"),
    }
    let long_chain = vec!["1"; 5_000].join(" + ");
    assert!(Expression::compile(&long_chain).is_err());
    let minus_chain = format!("{}1", "-".repeat(5_000));
    assert!(Expression::compile(&minus_chain).is_err());
    // The deepest nesting and the longest chain accepted still compile and evaluate on
    // a 2 MiB thread stack (a tokio worker's), even in a debug build.
    let nested = format!("{}x{}", "[".repeat(39), "]".repeat(39));
    let chained = format!("x{}", " + 1".repeat(255));
    let mixed = format!("{}1{}", "(-".repeat(39), ")".repeat(39));
    let vars = variables(ORDER);
    let result = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            [nested, chained, mixed]
                .iter()
                .map(|source| Expression::compile(source).and_then(|e| e.evaluate(&vars, NOW)))
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .join()
        .unwrap_or_else(|_| panic!("evaluation panicked"));
    assert!(
        matches!(&result[0], Ok(value) if serde_json::to_string(value).ok() == Some(format!("{}5{}", "[".repeat(39), "]".repeat(39)))),
        "{:?}",
        result[0]
    );
    assert_eq!(result[1], Ok(Json::from(260)));
    assert_eq!(result[2], Ok(Json::from(-1)));
}

#[test]
fn building_huge_values_fails_instead_of_exhausting_memory() {
    let big = "x".repeat(1 << 20);
    let vars = variables(&format!(r#"{{"big": "{big}"}}"#));
    let cases = [
        "for i in 1..300 return big",
        "count(for i in 1..300 return [big])",
        "string length(replace(big, \"\", big))",
        "string length(big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big + big)",
        "string length(string join(for i in 1..300 return big))",
        "count((for i in 1..200 return big)[true])",
    ];
    for source in cases {
        let outcome = Expression::compile(source).and_then(|e| e.evaluate(&vars, NOW));
        assert!(
            matches!(&outcome, Err(FeelError::Evaluation { reason, .. })
                if reason.contains("MiB of strings and lists") || reason.contains("steps")),
            "{source}: {:?}",
            outcome.map(|v| v.to_string().len())
        );
    }
    // Modest sizes are fine.
    let outcome = Expression::compile("string length(string join(for i in 1..10 return big))")
        .and_then(|e| e.evaluate(&vars, NOW));
    assert_eq!(outcome, Ok(Json::from(10 << 20)));
}

#[test]
fn variable_names_are_the_free_top_level_names() {
    let cases: &[(&str, &[&str])] = &[
        ("order.total > 1000", &["order"]),
        ("b + a + a", &["a", "b"]),
        ("for i in items return i.price * rate", &["items", "rate"]),
        ("some x in xs satisfies x > limit", &["limit", "xs"]),
        ("{a: 1, b: a + c}", &["c"]),
        ("list[item > min]", &["list", "min"]),
        ("date and time(start) + duration(\"PT1H\")", &["start"]),
        ("`order id` = \"x\"", &["order id"]),
        ("1 + 2", &[]),
        ("now()", &[]),
    ];
    for (source, expected) in cases {
        let expression = Expression::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(expression.variable_names(), *expected, "{source}");
        assert_eq!(expression.source(), *source);
    }
}

#[test]
fn typed_helpers() {
    let vars = variables(ORDER);
    let compile =
        |source: &str| Expression::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"));
    assert_eq!(
        compile("order.total > 1000").evaluate_condition(&vars, NOW),
        Ok(true)
    );
    assert_eq!(
        compile("missing > 1000").evaluate_condition(&vars, NOW),
        Ok(false)
    );
    let not_boolean = compile("x").evaluate_condition(&vars, NOW);
    assert!(
        matches!(&not_boolean, Err(FeelError::Evaluation { reason, .. }) if reason == "expected a boolean, but the result was number 5"),
        "{not_boolean:?}"
    );

    assert_eq!(
        compile("\"pay-\" + name").evaluate_string(&vars, NOW),
        Ok("pay-Ada".to_owned())
    );
    let missing = compile("jobType").evaluate_string(&vars, NOW);
    assert!(
        matches!(&missing, Err(error) if error.reason() == "expected a string, but the result was null (no variable found with name 'jobType')"),
        "{missing:?}"
    );
    assert_eq!(
        compile("order.id").evaluate_correlation_key(&vars, NOW),
        Ok("o-1".to_owned())
    );
    assert_eq!(
        compile("x * 2").evaluate_correlation_key(&vars, NOW),
        Ok("10".to_owned())
    );
    assert_eq!(
        compile("y").evaluate_correlation_key(&vars, NOW),
        Ok("2.5".to_owned())
    );
    assert!(
        compile("flag")
            .evaluate_correlation_key(&vars, NOW)
            .is_err()
    );

    assert_eq!(compile("x - 2").evaluate_integer(&vars, NOW), Ok(3));
    assert!(compile("y").evaluate_integer(&vars, NOW).is_err());

    let duration = |source: &str| compile(source).evaluate_duration(&vars, NOW);
    assert_eq!(duration("duration(\"PT5S\")").map(|d| d.millis), Ok(5_000));
    assert_eq!(duration("\"PT5S\"").map(|d| d.millis), Ok(5_000));
    assert_eq!(duration("duration(\"P2M\")").map(|d| d.months), Ok(2));
    assert!(duration("\"5 seconds\"").is_err());

    let date_time = |source: &str| compile(source).evaluate_date_time(&vars, NOW);
    assert_eq!(date_time("now() + duration(\"PT1M\")"), Ok(NOW + 60_000));
    assert_eq!(date_time("\"2026-11-30T11:00:00+01:00\""), Ok(NOW));
    assert_eq!(
        date_time("order.placed"),
        Ok(NOW - 2 * 86_400_000 - 30 * 60_000)
    );
    assert!(date_time("date and time(\"2026-11-30T10:00:00\")").is_err());

    let cycle = compile("\"R3/PT10S\"").evaluate_cycle(&vars, NOW);
    assert_eq!(
        cycle.map(|c| (c.repetitions, c.interval.millis)),
        Ok((3, 10_000))
    );
}

#[test]
fn outputs_are_stable_and_deterministic() {
    let vars = variables(ORDER);
    let expression = Expression::compile(
        "{z: order.customer, a: for i in order.items return {sku: i.sku, cost: i.qty * i.price}}",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let first = expression
        .evaluate(&vars, NOW)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        first.to_string(),
        r#"{"z":{"id":"c-9","name":"Ada Lovelace","vip":true},"a":[{"sku":"a-1","cost":20},{"sku":"b-2","cost":99.99},{"sku":"c-3","cost":7.5}]}"#
    );
    for _ in 0..3 {
        assert_eq!(
            expression.evaluate(&vars, NOW).map(|v| v.to_string()),
            Ok(first.to_string())
        );
    }
}

#[test]
fn expressions_are_shareable_across_threads_and_comparable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Expression>();
    let compile = |source: &str| Expression::compile(source).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(compile("x + 1"), compile("x + 1"));
    assert_ne!(compile("x + 1"), compile("x + 2"));
    assert_eq!(format!("{:?}", compile("x")), "Expression(\"x\")");
}

/// The 14 range functions, with the examples of Camunda's FEEL documentation and the
/// DMN text's definitions at the edges (open and closed ends).
#[test]
fn range_functions() {
    check(
        &[
            // before / after: point-point, point-range, range-point, range-range.
            ("before(1, 10)", J("true")),
            ("before(10, 1)", J("false")),
            ("before(1, [2..5])", J("true")),
            ("before(1, [1..10])", J("false")),
            ("before(1, (1..10])", J("true")),
            ("before([1..5], 10)", J("true")),
            ("before([1..10], 10)", J("false")),
            ("before([1..10), 10)", J("true")),
            ("before([1..5], [6..10])", J("true")),
            ("before([1..5),[5..10])", J("true")),
            ("before([1..10], [10..20])", J("false")),
            ("before([1..10], (10..20])", J("true")),
            ("after(10, 1)", J("true")),
            ("after(1, 10)", J("false")),
            ("after(12, [2..5])", J("true")),
            ("after(10, [1..10))", J("true")),
            ("after(10, [1..10])", J("false")),
            ("after([1..5], 10)", J("false")),
            ("after((11..20], 11)", J("true")),
            ("after([11..20], 11)", J("false")),
            ("after([6..10], [1..5])", J("true")),
            ("after([5..10], [1..5))", J("true")),
            ("after([11..20], [1..11))", J("true")),
            ("after([1..10], [11..20])", J("false")),
            // meets / met by.
            ("meets([1..5], [5..10])", J("true")),
            ("meets([1..3], [4..6])", J("false")),
            ("meets([1..5), [5..10])", J("false")),
            ("meets([1..5], (5..8])", J("false")),
            ("met by([5..10], [1..5])", J("true")),
            ("met by([3..4], [1..2])", J("false")),
            ("met by((5..8], [1..5))", J("false")),
            ("met by([5..10], [1..5))", J("false")),
            // overlaps, overlaps before, overlaps after.
            ("overlaps([5..10], [1..6])", J("true")),
            ("overlaps((3..7], [1..4])", J("true")),
            ("overlaps([1..3], (3..6])", J("false")),
            ("overlaps((5..8], [1..5))", J("false")),
            ("overlaps([4..10], [1..5))", J("true")),
            ("overlaps([1..8], [3..5])", J("true")),
            ("overlaps([1..5], [5..8])", J("true")),
            ("overlaps([6..8], [1..5])", J("false")),
            ("overlaps before([1..5], [4..10])", J("true")),
            ("overlaps before([3..4], [1..2])", J("false")),
            ("overlaps before([1..3], (3..5])", J("false")),
            ("overlaps before([1..5), (3..8])", J("true")),
            ("overlaps before([1..5), [5..10])", J("false")),
            ("overlaps before([1..5), (1..5])", J("true")),
            ("overlaps before([1..5], [1..5])", J("false")),
            ("overlaps after([4..10], [1..5])", J("true")),
            ("overlaps after([3..4], [1..2])", J("false")),
            ("overlaps after([3..5], [1..3))", J("false")),
            ("overlaps after((5..8], [1..5))", J("false")),
            ("overlaps after([4..10], [1..5))", J("true")),
            ("overlaps after((1..5], [1..5))", J("true")),
            ("overlaps after([1..5], [1..5])", J("false")),
            // finishes / finished by.
            ("finishes(5, [1..5])", J("true")),
            ("finishes(10, [1..7])", J("false")),
            ("finishes(10, [1..10))", J("false")),
            ("finishes([3..5], [1..5])", J("true")),
            ("finishes((1..5], [1..5))", J("false")),
            ("finishes([5..10], [1..10))", J("false")),
            ("finishes([5..10), [1..10))", J("true")),
            ("finishes((1..10], [1..10])", J("true")),
            ("finished by([5..10], 10)", J("true")),
            ("finished by([3..4], 2)", J("false")),
            ("finished by([1..5], [3..5])", J("true")),
            ("finished by((5..8], [1..5))", J("false")),
            // The DMN text: the ends' inclusion must agree (FEEL-Scala's page says true).
            ("finished by([5..10], (1..10))", J("false")),
            // includes / during.
            ("includes([5..10], 6)", J("true")),
            ("includes([3..4], 5)", J("false")),
            ("includes([1..10], [4..6])", J("true")),
            ("includes((5..8], [1..5))", J("false")),
            ("includes([1..10], [1..5))", J("true")),
            ("during(5, [1..10])", J("true")),
            ("during(12, [1..10])", J("false")),
            ("during(1, (1..10])", J("false")),
            ("during(10, [1..10])", J("true")),
            ("during([4..6], [1..10))", J("true")),
            ("during((1..5], (1..10])", J("true")),
            ("during((1..10), [1..10])", J("true")),
            ("during([1..10], (1..10])", J("false")),
            // starts / started by.
            ("starts(1, [1..5])", J("true")),
            ("starts(1, (1..8])", J("false")),
            ("starts((1..5], [1..5])", J("false")),
            ("starts([1..10], [1..10])", J("true")),
            ("starts((1..10), (1..10))", J("true")),
            ("starts([1..10), [1..10])", J("true")),
            ("started by([1..10], 1)", J("true")),
            ("started by((1..10], 1)", J("false")),
            ("started by([1..10], [1..5])", J("true")),
            ("started by((1..10], [1..5))", J("false")),
            ("started by([1..10], [1..10))", J("true")),
            // coincides.
            ("coincides(5, 5)", J("true")),
            ("coincides(3, 4)", J("false")),
            ("coincides([1..5], [1..5])", J("true")),
            ("coincides((1..5], [1..5))", J("false")),
            ("coincides([1..5], [2..6])", J("false")),
            // Dates, times and durations are points too.
            (
                "before(date(\"2025-01-01\"), [date(\"2025-01-02\")..date(\"2025-12-31\")])",
                J("true"),
            ),
            (
                "during(@\"10:30:00\", [@\"09:00:00\"..@\"17:00:00\"))",
                J("true"),
            ),
            ("after(@\"P2D\", [@\"PT1H\"..@\"P1D\"])", J("true")),
            (
                "includes([@\"2025-01-01T00:00:00Z\"..@\"2025-02-01T00:00:00Z\"), now())",
                J("false"),
            ),
            // Named arguments pick the signature.
            ("before(point: 11, range: [5..10])", J("false")),
            // The names alone pick (point, range), the first signature with them.
            ("before(range: [5..10], point: 11)", J("false")),
            ("before(range1: [1..10], range2: (10..20])", J("true")),
            ("before(point1: 1, point2: 10)", J("true")),
            ("during(range: [1..10], point: 5)", J("true")),
            // null arguments and open ends give null.
            ("before(null, 1)", J("null")),
            ("after(missing, [1..5])", J("null")),
            ("includes([1..missing], 3)", J("null")),
            ("before(3, [5..missing])", J("true")),
            ("before([1..missing], 3)", J("null")),
            // Wrong kinds of arguments are errors.
            (
                "meets(1, [1..5])",
                Failure("meets() can't relate number 1 and range: it takes two ranges"),
            ),
            (
                "finishes([1..5], 5)",
                Failure("finishes() can't relate range and number 5"),
            ),
            (
                "finished by(5, [1..5])",
                Failure("it takes a range and a point, or two ranges"),
            ),
            (
                "coincides(1, [1..5])",
                Failure("it takes two points or two ranges"),
            ),
            (
                "before(1, \"a\")",
                Failure("before(): can't compare number 1 with string \"a\""),
            ),
            ("during(\"b\", [1..5])", Failure("during(): can't compare")),
            ("before(true, false)", Failure("can't compare boolean true")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn statistics_encoding_and_older_aliases() {
    check(
        &[
            ("mode(6, 3, 9, 6, 6)", J("[6]")),
            ("mode([6, 1, 9, 6, 1])", J("[1,6]")),
            ("mode([3, 6, 1, 9, 6, 1, 3])", J("[1,3,6]")),
            ("mode([2.5])", J("[2.5]")),
            ("mode([])", J("[]")),
            ("mode(numbers)", J("[1]")),
            ("mode([1, null])", J("null")),
            ("mode(missing)", J("null")),
            (
                "mode([\"a\"])",
                Failure("mode() expects numbers, but got string \"a\""),
            ),
            ("stddev(2, 4, 7, 5)", J("2.0816659994661326")),
            ("stddev([2, 4, 7, 5])", J("2.0816659994661326")),
            ("decimal(stddev([2, 4, 7, 5]), 4)", J("2.0817")),
            ("stddev([3, 3, 3])", J("0")),
            ("stddev([1, 3])", J("1.4142135623730951")),
            ("stddev([1])", J("null")),
            ("stddev([])", J("null")),
            ("stddev([1, null])", J("null")),
            ("stddev([1, \"a\"])", Failure("stddev() expects numbers")),
            ("to base64(\"FEEL\")", J("\"RkVFTA==\"")),
            ("to base64(\"\")", J("\"\"")),
            ("to base64(\"a\")", J("\"YQ==\"")),
            ("to base64(\"ab\")", J("\"YWI=\"")),
            ("to base64(\"abc\")", J("\"YWJj\"")),
            ("to base64(\"Grüße €\")", J("\"R3LDvMOfZSDigqw=\"")),
            ("to base64(value: name)", J("\"QWRh\"")),
            ("to base64(null)", J("null")),
            (
                "to base64(1)",
                Failure("to base64() expects a string, but got number 1"),
            ),
            // `and`/`or` are FEEL-Scala's older names of `all`/`any`.
            ("and([true, false])", J("false")),
            ("and(false, null, true)", J("false")),
            ("and(true, true)", J("true")),
            ("and([])", J("true")),
            ("and(true, null)", J("null")),
            ("or([false, true])", J("true")),
            ("or(false, null, true)", J("true")),
            ("or([])", J("false")),
            ("or(false, null)", J("null")),
            ("not(and(true, false))", J("true")),
            ("x > 1 and(true)", J("true")),
            (
                "and()",
                Syntax("function 'and' takes at least 1 argument, but 0 were given"),
            ),
            (
                "put({}, \"a\")",
                Syntax("function 'put' takes 3 arguments, but 2 were given"),
            ),
            ("flag or(true)", J("true")),
            // `put`/`put all` are FEEL-Scala's older names of `context put`/`context merge`.
            ("put({x: 1}, \"y\", 2)", J("{\"x\":1,\"y\":2}")),
            ("put({x: 1}, \"x\", 2)", J("{\"x\":2}")),
            ("put all({x: 1}, {y: 2})", J("{\"x\":1,\"y\":2}")),
            (
                "put all({x: 1, y: 3, z: 1}, {x: 2, y: 2, z: 3}, {x: 3})",
                J("{\"x\":3,\"y\":2,\"z\":3}"),
            ),
            ("put all({})", J("{}")),
            ("put all({a: 1})", J("{\"a\":1}")),
            // A single argument that is not a list is a list of one, as the DMN text has it.
            ("max(5)", J("5")),
            ("sum(1)", J("1")),
            ("all(true)", J("true")),
            ("mode(4)", J("[4]")),
            ("log(10)", J("2.302585092994046")),
            ("exp(5)", J("148.4131591025766")),
            ("sqrt(2)", J("1.4142135623730951")),
            ("put all([{a: 1}, {b: 2}])", J("{\"a\":1,\"b\":2}")),
            (
                "put all({}, 1)",
                Failure("put all() expects a list of contexts, but got number 1"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn context_key_paths() {
    check(
        &[
            ("get value({x: 1, y: {z: 0}}, [\"y\", \"z\"])", J("0")),
            (
                "get value({x: {y: {z: 0}}}, [\"x\", \"y\"])",
                J("{\"z\":0}"),
            ),
            ("get value({a: {b: 3}}, [\"b\"])", J("null")),
            ("get value({a: 1}, [\"a\", \"b\"])", J("null")),
            ("get value({a: 1}, [])", J("null")),
            (
                "get value(order, [\"customer\", \"name\"])",
                J("\"Ada Lovelace\""),
            ),
            ("get value(context: order, keys: [\"id\"])", J("\"o-1\"")),
            ("get value(m: {a: 1}, key: \"a\")", J("1")),
            (
                "get value({a: 1}, [1])",
                Failure("get value() expects a list of string keys, but got number 1"),
            ),
            (
                "get value({a: 1}, 1)",
                Failure("get value() expects a string key or a list of keys"),
            ),
            ("context put({x: 1}, [\"y\"], 2)", J("{\"x\":1,\"y\":2}")),
            (
                "context put({x: 1, y: {z: 0}}, [\"y\", \"z\"], 2)",
                J("{\"x\":1,\"y\":{\"z\":2}}"),
            ),
            (
                "context put({x: 1}, [\"y\", \"z\"], 2)",
                J("{\"x\":1,\"y\":{\"z\":2}}"),
            ),
            (
                "context put({y: {a: 1, z: 0}, x: 1}, [\"y\", \"z\"], 2)",
                J("{\"y\":{\"a\":1,\"z\":2},\"x\":1}"),
            ),
            // An entry on the way that is not a context is replaced by one.
            (
                "context put({x: 1, y: 5}, [\"y\", \"z\"], 2)",
                J("{\"x\":1,\"y\":{\"z\":2}}"),
            ),
            ("context put({x: 1}, [], 2)", J("null")),
            (
                "context put({x: 1}, [\"y\"], null)",
                J("{\"x\":1,\"y\":null}"),
            ),
            (
                "context put(context: {}, keys: [\"a\", \"b\", \"c\"], value: 1)",
                J("{\"a\":{\"b\":{\"c\":1}}}"),
            ),
            ("context put(null, [\"a\"], 1)", J("null")),
            (
                "context put({}, [\"a\", 2], 1)",
                Failure("expects a list of string keys"),
            ),
            (
                "context put([], [\"a\"], 1)",
                Failure("context put() expects a context, but got list"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn date_and_time_at_a_zone() {
    check(
        &[
            (
                "date and time(@\"2020-07-31T14:27:30@Europe/Berlin\", \"America/Los_Angeles\")",
                J("\"2020-07-31T05:27:30-07:00[America/Los_Angeles]\""),
            ),
            (
                "date and time(@\"2020-07-31T14:27:30+02:00\", \"Z\")",
                J("\"2020-07-31T12:27:30Z\""),
            ),
            (
                "date and time(@\"2020-07-31T12:00:00Z\", \"+05:30\")",
                J("\"2020-07-31T17:30:00+05:30\""),
            ),
            (
                "date and time(date and time(\"2020-01-15T12:00:00Z\"), \"Europe/Berlin\")",
                J("\"2020-01-15T13:00:00+01:00[Europe/Berlin]\""),
            ),
            // Without a zone the date-time is taken as UTC (as on Camunda 8's servers),
            // never as the host's zone.
            (
                "date and time(@\"2020-07-31T14:27:30\", \"Z\")",
                J("\"2020-07-31T14:27:30Z\""),
            ),
            (
                "date and time(@\"2020-07-31T14:27:30\", \"Europe/Berlin\")",
                J("\"2020-07-31T16:27:30+02:00[Europe/Berlin]\""),
            ),
            (
                "date and time(date: date and time(order.placed), timezone: \"Asia/Kolkata\").hour",
                J("15"),
            ),
            (
                "date and time(@\"2020-07-31T14:27:30Z\", \"Europe/Berlin\") = @\"2020-07-31T14:27:30Z\"",
                J("true"),
            ),
            ("date and time(missing, \"Z\")", J("null")),
            (
                "date and time(@\"2020-07-31T14:27:30Z\", \"Mars/Olympus\")",
                Failure("date and time(): unknown time zone 'Mars/Olympus'"),
            ),
            (
                "date and time(@\"2020-07-31T14:27:30Z\", \"+25:00\")",
                Failure("is not a zone offset"),
            ),
            (
                "date and time(@\"2020-07-31\", \"Z\")",
                Failure("date and time() expects a date and time, but got date 2020-07-31"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn temporal_literals() {
    check(
        &[
            ("@\"2025-01-01\"", J("\"2025-01-01\"")),
            ("@\"2025-01-01\" instance of date", J("true")),
            ("@\"2025-01-01\" + @\"P1D\"", J("\"2025-01-02\"")),
            ("@\"2025-01-31\" + @\"P1M\"", J("\"2025-02-28\"")),
            ("@\"P1D\"", J("\"P1D\"")),
            ("@\"PT36H\" instance of days and time duration", J("true")),
            ("@\"P1Y2M\"", J("\"P1Y2M\"")),
            ("@\"-PT5M\"", J("\"-PT5M\"")),
            ("@\"10:00:00\"", J("\"10:00:00\"")),
            ("@\"10:00:00+01:00\"", J("\"10:00:00+01:00\"")),
            ("@\"10:00:00\" instance of time", J("true")),
            ("@\"2025-01-01T10:00:00\"", J("\"2025-01-01T10:00:00\"")),
            ("@\"2025-01-01T10:00:00Z\"", J("\"2025-01-01T10:00:00Z\"")),
            (
                "@\"2025-01-01T10:00:00@Europe/Berlin\"",
                J("\"2025-01-01T10:00:00+01:00[Europe/Berlin]\""),
            ),
            (
                "@\"2025-07-01T10:00:00@Europe/Berlin\" = date and time(\"2025-07-01T08:00:00Z\")",
                J("true"),
            ),
            (
                "@\"2025-01-01T10:00:00@Europe/Berlin\".timezone",
                J("\"Europe/Berlin\""),
            ),
            (
                "date(date and time(order.placed)) < @\"2026-12-01\"",
                J("true"),
            ),
            ("now() - @\"P1D\"", J("\"2026-11-29T10:00:00Z\"")),
            (
                "[@\"2025-01-02\", @\"2025-01-01\"][item > @\"2025-01-01\"]",
                J("[\"2025-01-02\"]"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn named_arguments() {
    check(
        &[
            ("substring(string: \"abc\", start position: 2)", J("\"bc\"")),
            (
                "substring(start position: 2, string: \"abcdef\", length: 3)",
                J("\"bcd\""),
            ),
            (
                "contains(string: \"me@camunda.com\", match: \".de\")",
                J("false"),
            ),
            ("starts with(input: \"foobar\", match: \"fo\")", J("true")),
            ("string length(string: name)", J("3")),
            (
                "string join(list: [\"a\", \"b\"], prefix: \"[\", suffix: \"]\")",
                J("\"[ab]\""),
            ),
            (
                "string join(list: [\"a\", \"b\"], delimiter: \"-\")",
                J("\"a-b\""),
            ),
            (
                "replace(input: \"abc\", pattern: \"b\", replacement: \"x\")",
                J("\"axc\""),
            ),
            ("date(year: 2025, month: 1, day: 31)", J("\"2025-01-31\"")),
            ("date(from: \"2025-01-31\")", J("\"2025-01-31\"")),
            ("time(hour: 10, minute: 30, second: 0)", J("\"10:30:00\"")),
            ("floor(n: 1.5)", J("1")),
            ("round half up(n: 2.25, scale: 1)", J("2.3")),
            ("modulo(divisor: 5, dividend: 12)", J("2")),
            ("abs(number: -3)", J("3")),
            ("count(list: [1, 2])", J("2")),
            ("sum(list: [1, 2, 3])", J("6")),
            ("sublist(list: [1, 2, 3], start position: 2)", J("[2,3]")),
            (
                "append(list: [1], 2, 3)",
                Syntax("name all arguments or none"),
            ),
            ("list contains(element: 2, list: [1, 2])", J("true")),
            ("index of(list: [1, 2, 1], match: 1)", J("[1,3]")),
            (
                "insert before(list: [1, 3], position: 2, newItem: 2)",
                J("[1,2,3]"),
            ),
            ("get or else(value: missing, default: 7)", J("7")),
            ("is defined(value: x)", J("true")),
            ("is defined(value: missing)", J("false")),
            ("not(negand: false)", J("true")),
            (
                "context merge(contexts: [{a: 1}, {b: 2}])",
                J("{\"a\":1,\"b\":2}"),
            ),
            (
                "get entries(context: {a: 1})",
                J("[{\"key\":\"a\",\"value\":1}]"),
            ),
            (
                "years and months duration(from: @\"2011-12-22\", to: @\"2013-08-24\")",
                J("\"P1Y8M\""),
            ),
            ("number(from: \"1.5\")", J("1.5")),
            ("day of week(date: @\"2025-01-01\")", J("\"Wednesday\"")),
            ("`string length`(\"abc\")", J("3")),
            (
                "`no such`(\"a\")",
                Syntax("no function found with name 'no such'"),
            ),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn function_literals_and_user_functions() {
    check(
        &[
            (
                "sort(list: [3, 1, 4, 5, 2], precedes: function(x, y) x < y)",
                J("[1,2,3,4,5]"),
            ),
            ("sort([3, 1, 2], function(a, b) a > b)", J("[3,2,1]")),
            (
                "sort(numbers, function(a, b) a < b)",
                J("[1,1,2,3,4,5,6,9]"),
            ),
            (
                "sort(order.items, function(a, b) a.price < b.price).sku",
                J("[\"c-3\",\"a-1\",\"b-2\"]"),
            ),
            // Stable: equal items keep their order.
            (
                "sort([{k: 1, v: \"a\"}, {k: 0, v: \"b\"}, {k: 1, v: \"c\"}], function(x, y) x.k < y.k).v",
                J("[\"b\",\"a\",\"c\"]"),
            ),
            (
                "sort([\"b\", \"a\"], function(x, y) x < y)",
                J("[\"a\",\"b\"]"),
            ),
            ("sort([], function(x, y) x < y)", J("[]")),
            ("sort(null, function(x, y) x < y)", J("null")),
            // An inconsistent order never panics; a null answer means "not before".
            (
                "count(sort([5, 3, 8, 1, 9, 2, 7], function(a, b) true))",
                J("7"),
            ),
            ("sort([2, 1], function(a, b) null)", J("[2,1]")),
            (
                "sort([2, 1], function(a, b) 1)",
                Failure(
                    "sort(): the precedes function must return a boolean, but returned number 1",
                ),
            ),
            (
                "sort([2, 1], 5)",
                Failure("sort() expects a function as 'precedes', but got number 5"),
            ),
            (
                "sort([2, 1], function(a) true)",
                Failure("function(a) takes 1 argument, but 2 were given"),
            ),
            // User-defined functions in contexts, called by later entries.
            ("{f: function(a) a + 1, r: f(2)}.r", J("3")),
            ("{f: function(a, b) a * b, r: f(b: 3, a: 2)}.r", J("6")),
            ("{f: function() 42, r: f()}.r", J("42")),
            (
                "{double: function(x) x * 2, r: for i in [1, 2] return double(i)}.r",
                J("[2,4]"),
            ),
            ("{f: function(a) a + x, r: f(1)}.r", J("6")),
            ("{rate: 2, f: function(x) x * rate, r: f(5)}.r", J("10")),
            ("{f: function(a: number) a, r: f(null)}.r", J("null")),
            (
                "{f: function(s: string) upper case(s), r: f(s: \"a\")}.r",
                J("\"A\""),
            ),
            // Closures keep the values they were made with.
            (
                "{add: function(a) function(b) a + b, r: add(1)(2)}.r",
                J("3"),
            ),
            (
                "for i in [1, 2] return {f: function(x) x + i}.f(10)",
                J("[11,12]"),
            ),
            (
                "order.items[{f: function(p) p > 5}.f(price)].sku",
                J("[\"a-1\",\"b-2\"]"),
            ),
            ("(function(x) x * 2)(21)", J("42")),
            (
                "{fs: [function(x) x + 1, function(x) x * 10]}.fs[2](3)",
                J("30"),
            ),
            (
                "{f: function(g, x) g(g(x)), r: f(function(y) y * 3, 2)}.r",
                J("18"),
            ),
            ("(function(a) a) instance of function", J("true")),
            ("x instance of function", J("false")),
            ("{f: function(a) a, r: f instance of function}.r", J("true")),
            ("string({f: function(a, b) a}.f)", J("\"function(a, b)\"")),
            // Errors.
            (
                "function(a) a + 1",
                Failure("the result is a function (function(a)), which has no JSON form"),
            ),
            ("{f: function(a) a}", Failure("which has no JSON form")),
            (
                "{f: 1, r: f(2)}.r",
                Failure("'f' is not a function but number 1"),
            ),
            (
                "{c: {}, r: c.g(2)}.r",
                Failure("'c.g' is not a function but null"),
            ),
            (
                "{f: function(a) a, r: f(1, 2)}.r",
                Failure("function(a) takes 1 argument, but 2 were given"),
            ),
            (
                "{f: function(a, b) a, r: f(1)}.r",
                Failure("function(a, b) takes 2 arguments, but 1 were given"),
            ),
            (
                "{f: function(a) a, r: f(b: 1)}.r",
                Failure("function(a) has no parameter 'b'"),
            ),
            (
                "{f: function(a, b) a, r: f(a: 1)}.r",
                Failure("function(a, b) is called without its parameter 'b'"),
            ),
            (
                "{f: function(a: number) a, r: f(\"x\")}.r",
                Failure("the parameter 'a' of function(a) expects number, but got string \"x\""),
            ),
            (
                "{f: function(g) g(g), r: f(f)}.r",
                Failure("evaluated too deeply"),
            ),
            (
                "{f: function(g, n) if n > 20 then 0 else g(g, n + 1) + g(g, n + 1), r: f(f, 0)}.r",
                Failure("steps"),
            ),
            ("function(a) x", Failure("no JSON form")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn random_number_and_uuid_come_from_the_environment() {
    use rill_feel::Environment;
    let vars = variables(ORDER);
    let compile = |source: &str| Expression::compile(source).unwrap_or_else(|e| panic!("{e}"));
    let random = compile("random number()");
    let draw = |environment: Environment| -> f64 {
        match random.evaluate(&vars, environment) {
            Ok(Json::Number(n)) => n.as_f64().unwrap_or(-1.0),
            other => panic!("{other:?}"),
        }
    };
    // The same entry and evaluation: the same value on every replica.
    let entry = Environment::for_entry(NOW, 1, 42, 0);
    assert_eq!(draw(entry), draw(entry));
    assert_eq!(draw(entry), draw(Environment::for_entry(NOW + 5, 1, 42, 0)));
    // Another evaluation, entry or partition: another value.
    assert_ne!(draw(entry), draw(Environment::for_entry(NOW, 1, 42, 1)));
    assert_ne!(draw(entry), draw(Environment::for_entry(NOW, 1, 43, 0)));
    assert_ne!(draw(entry), draw(Environment::for_entry(NOW, 2, 42, 0)));
    assert_eq!(
        draw(entry.with_seed(7)),
        draw(Environment::at(0).with_seed(7))
    );
    // A bare timestamp is `Environment::at`.
    assert_eq!(
        random.evaluate(&vars, NOW),
        random.evaluate(&vars, Environment::at(NOW))
    );
    // Uniform enough: 2,000 draws in [0, 1), all distinct, mean near 0.5.
    let values: Vec<f64> = (0..2_000)
        .map(|evaluation| draw(Environment::for_entry(NOW, 1, 42, evaluation)))
        .collect();
    assert!(values.iter().all(|v| (0.0..1.0).contains(v)), "{values:?}");
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    assert!((0.45..0.55).contains(&mean), "{mean}");
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    assert_eq!(sorted.len(), values.len());

    // Several draws in one evaluation differ, and replay identically.
    let many = compile("[uuid(), uuid(), random number(), random number()]");
    let first = many
        .evaluate(&vars, entry)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(many.evaluate(&vars, entry), Ok(first.clone()));
    let Json::Array(items) = &first else {
        panic!("{first}")
    };
    assert_ne!(items[0], items[1]);
    assert_ne!(items[2], items[3]);
    for uuid in &items[..2] {
        let text = uuid.as_str().unwrap_or_default();
        let groups: Vec<&str> = text.split('-').collect();
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12],
            "{text}"
        );
        assert!(
            text.chars()
                .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{text}"
        );
        assert!(groups[2].starts_with('4'), "version 4: {text}");
        assert!(
            groups[3].starts_with(['8', '9', 'a', 'b']),
            "variant: {text}"
        );
    }
    let distinct = compile("count(distinct values(for i in 1..1000 return uuid()))");
    assert_eq!(distinct.evaluate(&vars, entry), Ok(Json::from(1000)));
    check(
        &[
            ("string length(uuid())", J("36")),
            ("random number() instance of number", J("true")),
            ("uuid(1)", Syntax("function 'uuid' takes 0 arguments")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn functions_calling_themselves_stop_before_the_stack_ends() {
    // Every way of recursing without end fails with an error on a 2 MiB thread stack,
    // in a debug build, however deep the body or the expression around it.
    let deep_body = format!("{}g(g){}", "[".repeat(30), "]".repeat(30));
    let long_body = format!("g(g){}", " + 1".repeat(200));
    let nested_around = format!(
        "{}{{f: function(g) g(g), r: f(f)}}.r{}",
        "[".repeat(35),
        "]".repeat(35)
    );
    let cases = vec![
        "{f: function(g) g(g), r: f(f)}.r".to_owned(),
        format!("{{f: function(g) {deep_body}, r: f(f)}}.r"),
        format!("{{f: function(g) {long_body}, r: f(f)}}.r"),
        "{f: function(g) sort([1, 2], function(a, b) g(g)), r: f(f)}.r".to_owned(),
        "{f: function(g) {h: function(x) g(g)}.h(1), r: f(f)}.r".to_owned(),
        "{f: function(g) for i in [1] return g(g), r: f(f)}.r".to_owned(),
        "{f: function(g) [1, 2][g(g)], r: f(f)}.r".to_owned(),
        "{f: function(g) some i in [1] satisfies g(g), r: f(f)}.r".to_owned(),
        nested_around,
    ];
    let vars = variables(ORDER);
    let results = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            cases
                .iter()
                .map(|source| {
                    let outcome = Expression::compile(source).and_then(|e| e.evaluate(&vars, NOW));
                    (source.clone(), outcome)
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .join()
        .unwrap_or_else(|_| panic!("evaluation panicked"));
    for (source, outcome) in results {
        assert!(
            matches!(&outcome, Err(FeelError::Evaluation { reason, .. }) if reason.contains("evaluated too deeply")),
            "{source}: {outcome:?}"
        );
    }
}

#[test]
fn variable_names_see_through_functions() {
    let cases: &[(&str, &[&str])] = &[
        ("{f: function(a) a + rate, r: f(x)}", &["rate", "x"]),
        ("sort(items, function(a, b) a.price < b.price)", &["items"]),
        ("function(a) a", &[]),
        ("{f: function(a) a, r: f(1)}.r", &[]),
        (
            "for i in xs return (function(y) y + i + z)(1)",
            &["xs", "z"],
        ),
        ("@\"2025-01-01\" + duration(d)", &["d"]),
    ];
    for (source, expected) in cases {
        let expression = Expression::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(expression.variable_names(), *expected, "{source}");
    }
}

#[test]
fn long_chains_of_entries_and_closures_stay_within_the_stack() {
    // Each context entry may wrap the one before, and each closure may capture the one
    // before: neither is bounded by the parser's nesting limit. On a 2 MiB thread stack,
    // in a debug build, deep values are refused and closure chains are dropped without
    // recursing per link.
    let entries = format!(
        "{{a0: [], {}}}.a1999",
        (1..2000)
            .map(|i| format!("a{i}: [a{}]", i - 1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let closures = format!(
        "{{f0: function() 1, {}, x: 1}}.x",
        (1..20_000)
            .map(|i| format!("f{i}: function() f{}()", i - 1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let closures_in_lists = format!(
        "{{f0: function() 1, {}, x: 2}}.x",
        (1..5_000)
            .map(|i| format!("l{i}: [f{}], f{i}: function() l{i}[1]()", i - 1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let calling_down = format!(
        "{{f0: function() 1, {}}}.f2999()",
        (1..3_000)
            .map(|i| format!("f{i}: function() f{}()", i - 1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let cases: Vec<(String, Result<Json, &str>)> = vec![
        (entries, Err("the value of the context entry 'a256' is nested more than 256 levels deep")),
        (closures, Ok(Json::from(1))),
        (closures_in_lists, Ok(Json::from(2))),
        (calling_down, Err("evaluated too deeply")),
        (
            "{p: for i in 1..250 return \"k\", d: context put({}, p, 1), f: function() [[[[[[[[d]]]]]]]], r: f()}.r".to_owned(),
            Err("the result of function() is nested more than 256 levels deep"),
        ),
        (
            "context put({}, for i in 1..300 return \"k\", 1)".to_owned(),
            Err("context put(): the key path has more than 256 keys"),
        ),
        (
            "{p: for i in 1..200 return \"k\", r: context put({}, p, context put({}, p, 1))}.r".to_owned(),
            Err("context put(): the result is nested more than 256 levels deep"),
        ),
        (
            "count(get value(context put({}, for i in 1..200 return \"k\", [1]), for i in 1..200 return \"k\"))".to_owned(),
            Ok(Json::from(1)),
        ),
    ];
    let vars = variables(ORDER);
    let results = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            cases
                .into_iter()
                .map(|(source, expected)| {
                    let outcome = Expression::compile(&source).and_then(|e| e.evaluate(&vars, NOW));
                    (
                        source.chars().take(80).collect::<String>(),
                        expected,
                        outcome,
                    )
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .join()
        .unwrap_or_else(|_| panic!("evaluation panicked"));
    for (source, expected, outcome) in results {
        match (&expected, &outcome) {
            (Ok(value), Ok(actual)) => assert_eq!(value, actual, "{source}"),
            (Err(part), Err(FeelError::Evaluation { reason, .. })) => {
                assert!(reason.contains(part), "{source}: {reason}")
            }
            _ => panic!("{source}: expected {expected:?}, got {outcome:?}"),
        }
    }
}

#[test]
fn string_escapes_as_feel_scala_reads_them() {
    check(
        &[
            ("\"a\\:b\"", J(r#""a\\:b""#)),
            ("string length(\"a\\:b\")", J("4")),
            ("\"tab\\there\"", J(r#""tab\there""#)),
            ("\"back\\\\slash\"", J(r#""back\\slash""#)),
            ("\"\\b\\f\"", J(r#""\b\f""#)),
            // A regular expression needs no doubled backslash.
            ("matches(order.id, \"^o-\\d+$\")", J("true")),
            ("\"\\u12 is short\"", J(r#""\\u12 is short""#)),
            ("\"unclosed \\\"", Syntax("unclosed string")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn from_ai_returns_its_value() {
    check(
        &[
            ("fromAi(order.id)", J("\"o-1\"")),
            ("fromAi(x, \"The amount\")", J("5")),
            ("fromAi(x, null, \"number\")", J("5")),
            (
                "fromAi(tags, \"Tags\", \"array\", {items: {type: \"string\"}})",
                J(r#"["rush","gift"]"#),
            ),
            (
                "fromAi(name, \"Who\", \"string\", null, {required: false})",
                J("\"Ada\""),
            ),
            ("fromAi(value: x, type: \"number\")", J("5")),
            (
                "fromAi(value: name, description: \"Who\", schema: {type: \"string\"})",
                J("\"Ada\""),
            ),
            (
                "fromAi(value: missing, options: {required: false})",
                J("null"),
            ),
            ("{url: fromAi(toolCall.url, \"The URL\")}.url", J("null")),
            ("fromAi(x) + 1", J("6")),
            (
                "fromAi()",
                Syntax("function 'fromAi' takes 1 to 5 arguments"),
            ),
            ("fromAi(1, 2, 3, 4, 5, 6)", Syntax("takes 1 to 5 arguments")),
            ("fromAi(description: \"no value\")", Syntax("no signature")),
            ("fromai(x)", Syntax("no function found with name 'fromai'")),
        ],
        ORDER,
        NOW,
    );
}

#[test]
fn a_string_literal_evaluates_to_its_text() {
    for text in [
        "noAuth",
        "1",
        "true",
        "a \"quoted\" \\d+ text",
        "",
        "line\nbreak",
    ] {
        let literal = Expression::string_literal(text);
        assert_eq!(
            literal.evaluate(&Map::new(), NOW).ok(),
            Some(Json::String(text.to_owned())),
            "{text:?}"
        );
        assert!(literal.variable_names().is_empty());
        let recompiled =
            Expression::compile(literal.source()).map(|e| e.evaluate(&Map::new(), NOW));
        assert_eq!(
            recompiled.ok().and_then(Result::ok),
            Some(Json::String(text.to_owned())),
            "the source {:?} compiles back to the text",
            literal.source()
        );
    }
}
