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
    // Context
    GetValue,
    GetEntries,
    ContextPut,
    ContextMerge,
    Context,
}

/// (name, builtin, fewest arguments, most arguments; `usize::MAX` for any number).
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
    ("list contains", Builtin::ListContains, 2, 2),
    ("count", Builtin::Count, 1, 1),
    ("min", Builtin::Min, 1, usize::MAX),
    ("max", Builtin::Max, 1, usize::MAX),
    ("sum", Builtin::Sum, 1, usize::MAX),
    ("mean", Builtin::Mean, 1, usize::MAX),
    ("median", Builtin::Median, 1, usize::MAX),
    ("product", Builtin::Product, 1, usize::MAX),
    ("all", Builtin::All, 1, usize::MAX),
    ("any", Builtin::Any, 1, usize::MAX),
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
    ("sort", Builtin::Sort, 1, 1),
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
    ("get value", Builtin::GetValue, 2, 2),
    ("get entries", Builtin::GetEntries, 1, 1),
    ("context put", Builtin::ContextPut, 3, 3),
    ("context merge", Builtin::ContextMerge, 1, 1),
    ("context", Builtin::Context, 1, 1),
];

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

    /// Checks the argument count, with a message naming the function.
    pub(crate) fn check_arity(self, count: usize) -> Result<(), String> {
        let Some(&(name, _, fewest, most)) = TABLE.iter().find(|(_, b, ..)| *b == self) else {
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
        let plural = if expected == "1" { "" } else { "s" };
        Err(format!(
            "function '{name}' takes {expected} argument{plural}, but {count} were given"
        ))
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
