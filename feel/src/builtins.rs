//! The built-in functions Rill supports: their names and how many arguments they take.
//! Calling anything else is reported when the expression is compiled.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    // Conversion
    String,
    Number,
    Date,
    Time,
    DateAndTime,
    Duration,
    YearsAndMonthsDuration,
    // Boolean
    Not,
    IsDefined,
    GetOrElse,
    Assert,
    // Temporal
    Now,
    Today,
    DayOfWeek,
    DayOfYear,
    MonthOfYear,
    WeekOfYear,
    LastDayOfMonth,
    // String
    Substring,
    StringLength,
    UpperCase,
    LowerCase,
    SubstringBefore,
    SubstringAfter,
    Contains,
    StartsWith,
    EndsWith,
    Matches,
    Replace,
    Split,
    Extract,
    Trim,
    StringJoin,
    IsBlank,
    ToBase64,
    Uuid,
    // List
    ListContains,
    Count,
    Min,
    Max,
    Sum,
    Mean,
    Median,
    Product,
    All,
    Any,
    Sublist,
    Append,
    Concatenate,
    InsertBefore,
    Remove,
    Reverse,
    IndexOf,
    Union,
    DistinctValues,
    DuplicateValues,
    Flatten,
    IsEmpty,
    Sort,
    Partition,
    Stddev,
    Mode,
    // Number
    Decimal,
    Floor,
    Ceiling,
    RoundUp,
    RoundDown,
    RoundHalfUp,
    RoundHalfDown,
    Abs,
    Modulo,
    Sqrt,
    Log,
    Exp,
    Odd,
    Even,
    RandomNumber,
    // Context
    GetValue,
    GetEntries,
    ContextPut,
    ContextMerge,
    PutAll,
    Context,
    // Range
    Before,
    After,
    Meets,
    MetBy,
    Overlaps,
    OverlapsBefore,
    OverlapsAfter,
    Finishes,
    FinishedBy,
    Includes,
    During,
    Starts,
    StartedBy,
    Coincides,
    // Camunda extension
    FromAi,
}

/// (name, builtin, fewest arguments, most arguments; `usize::MAX` for any number).
/// A builtin's first entry is its name in messages; later entries are FEEL-Scala's
/// older aliases (`and`, `or`, `put`).
const TABLE: &[(&str, Builtin, usize, usize)] = &[
    ("string", Builtin::String, 1, 1),
    ("number", Builtin::Number, 1, 1),
    ("date", Builtin::Date, 1, 3),
    ("time", Builtin::Time, 1, 4),
    ("date and time", Builtin::DateAndTime, 1, 2),
    ("duration", Builtin::Duration, 1, 1),
    (
        "years and months duration",
        Builtin::YearsAndMonthsDuration,
        2,
        2,
    ),
    ("not", Builtin::Not, 1, 1),
    ("is defined", Builtin::IsDefined, 1, 1),
    ("get or else", Builtin::GetOrElse, 2, 2),
    ("assert", Builtin::Assert, 2, 3),
    ("now", Builtin::Now, 0, 0),
    ("today", Builtin::Today, 0, 0),
    ("day of week", Builtin::DayOfWeek, 1, 1),
    ("day of year", Builtin::DayOfYear, 1, 1),
    ("month of year", Builtin::MonthOfYear, 1, 1),
    ("week of year", Builtin::WeekOfYear, 1, 1),
    ("last day of month", Builtin::LastDayOfMonth, 1, 1),
    ("substring", Builtin::Substring, 2, 3),
    ("string length", Builtin::StringLength, 1, 1),
    ("upper case", Builtin::UpperCase, 1, 1),
    ("lower case", Builtin::LowerCase, 1, 1),
    ("substring before", Builtin::SubstringBefore, 2, 2),
    ("substring after", Builtin::SubstringAfter, 2, 2),
    ("contains", Builtin::Contains, 2, 2),
    ("starts with", Builtin::StartsWith, 2, 2),
    ("ends with", Builtin::EndsWith, 2, 2),
    ("matches", Builtin::Matches, 2, 3),
    ("replace", Builtin::Replace, 3, 4),
    ("split", Builtin::Split, 2, 2),
    ("extract", Builtin::Extract, 2, 2),
    ("trim", Builtin::Trim, 1, 1),
    ("string join", Builtin::StringJoin, 1, 4),
    ("is blank", Builtin::IsBlank, 1, 1),
    ("to base64", Builtin::ToBase64, 1, 1),
    ("uuid", Builtin::Uuid, 0, 0),
    ("list contains", Builtin::ListContains, 2, 2),
    ("count", Builtin::Count, 1, 1),
    ("min", Builtin::Min, 1, usize::MAX),
    ("max", Builtin::Max, 1, usize::MAX),
    ("sum", Builtin::Sum, 1, usize::MAX),
    ("mean", Builtin::Mean, 1, usize::MAX),
    ("median", Builtin::Median, 1, usize::MAX),
    ("product", Builtin::Product, 1, usize::MAX),
    ("all", Builtin::All, 1, usize::MAX),
    ("and", Builtin::All, 1, usize::MAX),
    ("any", Builtin::Any, 1, usize::MAX),
    ("or", Builtin::Any, 1, usize::MAX),
    ("stddev", Builtin::Stddev, 1, usize::MAX),
    ("mode", Builtin::Mode, 1, usize::MAX),
    ("sublist", Builtin::Sublist, 2, 3),
    ("append", Builtin::Append, 1, usize::MAX),
    ("concatenate", Builtin::Concatenate, 0, usize::MAX),
    ("insert before", Builtin::InsertBefore, 3, 3),
    ("remove", Builtin::Remove, 2, 2),
    ("reverse", Builtin::Reverse, 1, 1),
    ("index of", Builtin::IndexOf, 2, 2),
    ("union", Builtin::Union, 0, usize::MAX),
    ("distinct values", Builtin::DistinctValues, 1, 1),
    ("duplicate values", Builtin::DuplicateValues, 1, 1),
    ("flatten", Builtin::Flatten, 1, 1),
    ("is empty", Builtin::IsEmpty, 1, 1),
    ("sort", Builtin::Sort, 1, 2),
    ("partition", Builtin::Partition, 2, 2),
    ("decimal", Builtin::Decimal, 2, 2),
    ("floor", Builtin::Floor, 1, 2),
    ("ceiling", Builtin::Ceiling, 1, 2),
    ("round up", Builtin::RoundUp, 2, 2),
    ("round down", Builtin::RoundDown, 2, 2),
    ("round half up", Builtin::RoundHalfUp, 2, 2),
    ("round half down", Builtin::RoundHalfDown, 2, 2),
    ("abs", Builtin::Abs, 1, 1),
    ("modulo", Builtin::Modulo, 2, 2),
    ("sqrt", Builtin::Sqrt, 1, 1),
    ("log", Builtin::Log, 1, 1),
    ("exp", Builtin::Exp, 1, 1),
    ("odd", Builtin::Odd, 1, 1),
    ("even", Builtin::Even, 1, 1),
    ("random number", Builtin::RandomNumber, 0, 0),
    ("get value", Builtin::GetValue, 2, 2),
    ("get entries", Builtin::GetEntries, 1, 1),
    ("context put", Builtin::ContextPut, 3, 3),
    ("put", Builtin::ContextPut, 3, 3),
    ("context merge", Builtin::ContextMerge, 1, 1),
    ("put all", Builtin::PutAll, 1, usize::MAX),
    ("context", Builtin::Context, 1, 1),
    ("before", Builtin::Before, 2, 2),
    ("after", Builtin::After, 2, 2),
    ("meets", Builtin::Meets, 2, 2),
    ("met by", Builtin::MetBy, 2, 2),
    ("overlaps", Builtin::Overlaps, 2, 2),
    ("overlaps before", Builtin::OverlapsBefore, 2, 2),
    ("overlaps after", Builtin::OverlapsAfter, 2, 2),
    ("finishes", Builtin::Finishes, 2, 2),
    ("finished by", Builtin::FinishedBy, 2, 2),
    ("includes", Builtin::Includes, 2, 2),
    ("during", Builtin::During, 2, 2),
    ("starts", Builtin::Starts, 2, 2),
    ("started by", Builtin::StartedBy, 2, 2),
    ("coincides", Builtin::Coincides, 2, 2),
    ("fromAi", Builtin::FromAi, 1, 5),
];

/// Parameter names for calls with named arguments, one list per signature (FEEL-Scala's
/// names; the DMN text's where they differ). `?` marks an optional parameter, `...` one
/// that takes the remaining positional arguments and so cannot be named.
fn signatures(builtin: Builtin) -> &'static [&'static [&'static str]] {
    use Builtin as B;
    match builtin {
        B::String | B::Number | B::Duration => &[&["from"]],
        B::Date => &[&["from"], &["year", "month", "day"]],
        B::Time => &[&["from"], &["hour", "minute", "second", "offset?"]],
        B::DateAndTime => &[&["from"], &["date", "time"], &["date", "timezone"]],
        B::YearsAndMonthsDuration => &[&["from", "to"]],
        B::Not => &[&["negand"]],
        B::IsDefined => &[&["value"]],
        B::GetOrElse => &[&["value", "default"]],
        B::Assert => &[&["value", "condition", "cause?"]],
        B::Now | B::Today | B::Uuid | B::RandomNumber => &[&[]],
        B::DayOfWeek | B::DayOfYear | B::MonthOfYear | B::WeekOfYear | B::LastDayOfMonth => {
            &[&["date"]]
        }
        B::Substring => &[&["string", "start position", "length?"]],
        B::StringLength | B::UpperCase | B::LowerCase | B::Trim | B::IsBlank => &[&["string"]],
        B::SubstringBefore | B::SubstringAfter | B::Contains | B::StartsWith | B::EndsWith => {
            &[&["string", "match"], &["input", "match"]]
        }
        B::Matches => &[&["input", "pattern", "flags?"]],
        B::Replace => &[&["input", "pattern", "replacement", "flags?"]],
        B::Split => &[&["string", "delimiter"]],
        B::Extract => &[&["string", "pattern"]],
        B::StringJoin => &[&["list", "delimiter?", "prefix?", "suffix?"]],
        B::ToBase64 => &[&["value"]],
        B::ListContains => &[&["list", "element"]],
        B::Count
        | B::Min
        | B::Max
        | B::Sum
        | B::Mean
        | B::Median
        | B::Product
        | B::Stddev
        | B::Mode
        | B::All
        | B::Any
        | B::Reverse
        | B::DistinctValues
        | B::DuplicateValues
        | B::Flatten
        | B::IsEmpty => &[&["list"]],
        B::Sublist => &[&["list", "start position", "length?"]],
        B::Append => &[&["list", "...items"]],
        B::Concatenate | B::Union => &[&["...lists"]],
        B::InsertBefore => &[&["list", "position", "newItem"]],
        B::Remove => &[&["list", "position"]],
        B::IndexOf => &[&["list", "match"]],
        B::Sort => &[&["list", "precedes?"]],
        B::Partition => &[&["list", "size"]],
        B::Decimal | B::RoundUp | B::RoundDown | B::RoundHalfUp | B::RoundHalfDown => {
            &[&["n", "scale"]]
        }
        B::Floor | B::Ceiling => &[&["n", "scale?"]],
        B::Abs => &[&["n"], &["number"]],
        B::Modulo => &[&["dividend", "divisor"]],
        B::Sqrt | B::Log | B::Exp | B::Odd | B::Even => &[&["number"], &["n"]],
        B::GetValue => &[&["context", "key"], &["context", "keys"], &["m", "key"]],
        B::GetEntries => &[&["context"], &["m"]],
        B::ContextPut => &[&["context", "key", "value"], &["context", "keys", "value"]],
        B::ContextMerge => &[&["contexts"]],
        B::PutAll => &[&["...contexts"]],
        B::Context => &[&["entries"]],
        B::Before | B::After => &[
            &["point1", "point2"],
            &["point", "range"],
            &["range", "point"],
            &["range1", "range2"],
        ],
        B::Meets | B::MetBy | B::Overlaps | B::OverlapsBefore | B::OverlapsAfter => {
            &[&["range1", "range2"]]
        }
        B::Finishes | B::During | B::Starts => &[&["point", "range"], &["range1", "range2"]],
        B::FinishedBy | B::Includes | B::StartedBy => &[&["range", "point"], &["range1", "range2"]],
        B::Coincides => &[&["point1", "point2"], &["range1", "range2"]],
        B::FromAi => &[&["value", "description?", "type?", "schema?", "options?"]],
    }
}

impl Builtin {
    pub(crate) fn lookup(name: &str) -> Option<Builtin> {
        TABLE
            .iter()
            .find(|(entry_name, ..)| *entry_name == name)
            .map(|(_, builtin, ..)| *builtin)
    }

    pub(crate) fn name(self) -> &'static str {
        TABLE
            .iter()
            .find(|(_, builtin, ..)| *builtin == self)
            .map_or("?", |(name, ..)| name)
    }

    /// Checks the argument count of a call by the name `called` (an alias or the name).
    pub(crate) fn check_arity(self, called: &str, count: usize) -> Result<(), String> {
        let Some(&(_, _, fewest, most)) = TABLE.iter().find(|(_, b, ..)| *b == self) else {
            return Ok(());
        };
        if count >= fewest && count <= most {
            return Ok(());
        }
        let expected = if most == usize::MAX {
            format!("at least {fewest}")
        } else if fewest == most {
            format!("{fewest}")
        } else {
            format!("{fewest} to {most}")
        };
        // "takes 1 argument", "takes at least 1 argument", "takes 1 to 2 arguments".
        let plural = if fewest == 1 && (most == 1 || most == usize::MAX) {
            ""
        } else {
            "s"
        };
        Err(format!(
            "function '{called}' takes {expected} argument{plural}, but {count} were given"
        ))
    }

    /// Puts named arguments in the order of the first signature they fit: every name is
    /// a parameter of it and every required parameter is given. A skipped optional
    /// parameter before a given one becomes `null`.
    pub(crate) fn order_named<T>(
        self,
        mut named: Vec<(String, T)>,
        null: impl Fn() -> T,
    ) -> Result<Vec<T>, String> {
        let name = self.name();
        if let Some((given, _)) = named.iter().find(|(given, _)| {
            signatures(self)
                .iter()
                .any(|params| params.iter().any(|p| p.strip_prefix("...") == Some(given)))
        }) {
            return Err(format!(
                "the parameter '{given}' of '{name}' takes several values and can't be named; pass the arguments in order"
            ));
        }
        let fits = |params: &[&str]| {
            named.iter().all(|(given, _)| {
                params
                    .iter()
                    .any(|param| param.trim_end_matches('?') == given)
            }) && params
                .iter()
                .filter(|param| !param.ends_with('?') && !param.starts_with("..."))
                .all(|param| named.iter().any(|(given, _)| given == param))
        };
        let Some(params) = signatures(self).iter().find(|params| fits(params)) else {
            let known: Vec<String> = signatures(self)
                .iter()
                .map(|params| format!("({})", params.join(", ")))
                .collect();
            let given: Vec<&str> = named.iter().map(|(given, _)| given.as_str()).collect();
            return Err(format!(
                "function '{name}' has no signature with the parameters ({}); it takes {}",
                given.join(", "),
                known.join(" or ")
            ));
        };
        let mut ordered = Vec::with_capacity(params.len());
        let mut pending = 0;
        for param in params.iter() {
            let param = param.trim_end_matches('?');
            match named.iter().position(|(given, _)| given == param) {
                Some(index) => {
                    for _ in 0..pending {
                        ordered.push(null());
                    }
                    pending = 0;
                    ordered.push(named.swap_remove(index).1);
                }
                None => pending += 1,
            }
        }
        Ok(ordered)
    }

    /// Multi-word names whose first word is `first`, longest first, as word lists.
    pub(crate) fn multi_word_names(first: &str) -> impl Iterator<Item = Vec<&'static str>> {
        let mut names: Vec<Vec<&'static str>> = TABLE
            .iter()
            .map(|(name, ..)| name.split(' ').collect::<Vec<_>>())
            .filter(|words| words.len() > 1 && words[0] == first)
            .collect();
        names.sort_by_key(|words| std::cmp::Reverse(words.len()));
        names.into_iter()
    }
}
