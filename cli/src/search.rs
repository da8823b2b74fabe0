//! The CLI's listings (`rill instances`, `rill incidents`, `rill jobs list`): one search
//! endpoint each, walked page by page with `page.after` until the limit, printed as a
//! table or as the items' JSON.

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};

use crate::client::Client;

/// The largest page the gateway answers (`page.limit`).
pub const MAX_PAGE: u32 = 10_000;

/// Filters and paging shared by the listings.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// How many items to show at most (pages are fetched until there are this many).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Items asked per request.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PAGE)))]
    pub page_size: u32,
    /// Print the items as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One listing: where it searches, how it filters, which columns its table shows.
pub struct Listing {
    pub path: &'static str,
    /// What one item is called, for the summary line ("process instances").
    pub what: &'static str,
    pub filter: Map<String, Value>,
    pub columns: &'static [Column],
}

/// A table column: its header and the item field it shows.
pub struct Column {
    pub header: &'static str,
    pub field: &'static str,
}

pub const INSTANCE_COLUMNS: &[Column] = &[
    Column {
        header: "KEY",
        field: "processInstanceKey",
    },
    Column {
        header: "PROCESS",
        field: "processDefinitionId",
    },
    Column {
        header: "VERSION",
        field: "processDefinitionVersion",
    },
    Column {
        header: "STATE",
        field: "state",
    },
    Column {
        header: "INCIDENT",
        field: "hasIncident",
    },
    Column {
        header: "START",
        field: "startDate",
    },
    Column {
        header: "END",
        field: "endDate",
    },
];

pub const INCIDENT_COLUMNS: &[Column] = &[
    Column {
        header: "KEY",
        field: "incidentKey",
    },
    Column {
        header: "STATE",
        field: "state",
    },
    Column {
        header: "TYPE",
        field: "errorType",
    },
    Column {
        header: "PROCESS",
        field: "processDefinitionId",
    },
    Column {
        header: "INSTANCE",
        field: "processInstanceKey",
    },
    Column {
        header: "ELEMENT",
        field: "elementId",
    },
    Column {
        header: "CREATED",
        field: "creationTime",
    },
    Column {
        header: "MESSAGE",
        field: "errorMessage",
    },
];

pub const JOB_COLUMNS: &[Column] = &[
    Column {
        header: "KEY",
        field: "jobKey",
    },
    Column {
        header: "TYPE",
        field: "type",
    },
    Column {
        header: "STATE",
        field: "state",
    },
    Column {
        header: "RETRIES",
        field: "retries",
    },
    Column {
        header: "WORKER",
        field: "worker",
    },
    Column {
        header: "INSTANCE",
        field: "processInstanceKey",
    },
    Column {
        header: "ELEMENT",
        field: "elementId",
    },
];

/// What a listing found: up to the limit of items, and how many matched in all.
#[derive(Debug)]
pub struct Found {
    pub items: Vec<Value>,
    pub total: u64,
    /// More matched than the gateway counts (`hasMoreTotalItems`).
    pub more_total: bool,
}

impl Client {
    /// Runs a listing's search, following `endCursor` until `limit` items are read or
    /// the matches run out.
    pub async fn list(&self, listing: &Listing, args: &ListArgs) -> Result<Found> {
        let mut items: Vec<Value> = Vec::new();
        let mut after: Option<String> = None;
        let (mut total, mut more_total) = (0, false);
        while items.len() < args.limit as usize {
            let want = (args.limit as usize - items.len()).min(args.page_size as usize);
            let mut page = json!({"limit": want});
            if let Some(cursor) = &after {
                page["after"] = json!(cursor);
            }
            let body = json!({"filter": listing.filter, "page": page});
            let answer = self.post(listing.path, body).await?;
            let Some(got) = answer["items"].as_array() else {
                bail!(
                    "the gateway answered {} without items: {answer}",
                    listing.path
                );
            };
            total = answer["page"]["totalItems"].as_u64().unwrap_or(0);
            more_total = answer["page"]["hasMoreTotalItems"]
                .as_bool()
                .unwrap_or(false);
            let short = got.len() < want;
            items.extend(got.iter().cloned());
            after = answer["page"]["endCursor"].as_str().map(str::to_owned);
            if short || after.is_none() {
                break;
            }
        }
        Ok(Found {
            items,
            total,
            more_total,
        })
    }
}

/// The items as an aligned table, with a summary line under it.
pub fn table(listing: &Listing, found: &Found) -> String {
    let rows: Vec<Vec<String>> = found
        .items
        .iter()
        .map(|item| {
            listing
                .columns
                .iter()
                .map(|c| cell(&item[c.field]))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = listing.columns.iter().map(|c| c.header.len()).collect();
    for row in &rows {
        for (width, text) in widths.iter_mut().zip(row) {
            *width = (*width).max(text.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (text, width)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(text);
            } else {
                out.push_str(&format!("{text:<width$}  "));
            }
        }
        out.trim_end().to_owned()
    };
    let mut out = String::new();
    out.push_str(&line(listing.columns.iter().map(|c| c.header).collect()));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    let plus = if found.more_total { "+" } else { "" };
    out.push_str(&format!(
        "{} of {}{plus} {}\n",
        found.items.len(),
        found.total,
        listing.what
    ));
    out
}

/// A value as a table cell: strings bare, nothing as "-".
fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) if s.is_empty() => "-".to_owned(),
        Value::String(s) => s.replace(['\n', '\t'], " "),
        other => other.to_string(),
    }
}

/// Adds `field = value` to a filter when the flag was given.
pub fn put(filter: &mut Map<String, Value>, field: &str, value: Option<String>) {
    if let Some(value) = value {
        filter.insert(field.to_owned(), Value::String(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_aligns_columns_and_counts() {
        let listing = Listing {
            path: "/v2/jobs/search",
            what: "jobs",
            filter: Map::new(),
            columns: &[
                Column {
                    header: "KEY",
                    field: "jobKey",
                },
                Column {
                    header: "WORKER",
                    field: "worker",
                },
                Column {
                    header: "RETRIES",
                    field: "retries",
                },
            ],
        };
        let found = Found {
            items: vec![
                json!({"jobKey": "2251799813685249", "worker": "", "retries": 3}),
                json!({"jobKey": "7", "worker": "w1", "retries": 0}),
            ],
            total: 12,
            more_total: false,
        };
        assert_eq!(
            table(&listing, &found),
            "KEY               WORKER  RETRIES\n\
             2251799813685249  -       3\n\
             7                 w1      0\n\
             2 of 12 jobs\n"
        );
    }
}
