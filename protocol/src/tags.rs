//! Process instance tags (Camunda 8.8): labels given when an instance is created,
//! carried on its records, its jobs and its user tasks, and searchable.

/// At most this many tags on one process instance.
pub const MAX_TAGS: usize = 10;
/// At most this many characters in one tag.
pub const MAX_TAG_LENGTH: usize = 100;
/// What a valid tag looks like, for error messages.
pub const TAG_FORMAT: &str = "Tags must start with a letter (a-z, A-Z), followed by \
     alphanumerics, underscores, minuses, colons, or periods. It must not be blank and must \
     be 100 characters or less.";

/// Whether `tag` is a valid tag: an ASCII letter, then ASCII letters, digits, `_`, `-`,
/// `:` or `.`, 100 characters at most.
pub fn is_valid_tag(tag: &str) -> bool {
    let mut chars = tag.chars();
    tag.len() <= MAX_TAG_LENGTH
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'))
}

/// Checks a requested tag set and returns it as Rill keeps it: a set, so a repeated
/// tag counts once, in the order first given. The error names the bad tag or the count.
pub fn validate_tags(tags: &[String]) -> Result<Vec<String>, String> {
    let mut set: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        if !is_valid_tag(tag) {
            return Err(format!(
                "The provided tag '{tag}' is not valid. {TAG_FORMAT}"
            ));
        }
        if !set.contains(tag) {
            set.push(tag.clone());
        }
    }
    if set.len() > MAX_TAGS {
        return Err(format!(
            "The provided number of tags '{}' is not supported. Ensure to not add more than \
             {MAX_TAGS} tags.",
            set.len()
        ));
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn valid_tags_are_kept_once_in_order() {
        let kept = validate_tags(&tags(&["b:1", "a.x-y_z", "b:1"])).unwrap();
        assert_eq!(kept, tags(&["b:1", "a.x-y_z"]));
        assert!(is_valid_tag(&"a".repeat(100)));
    }

    #[test]
    fn bad_tags_are_named() {
        for bad in ["", "1abc", "_a", "a b", "a/b", "ä", &"a".repeat(101)] {
            let error = validate_tags(&tags(&["ok", bad])).unwrap_err();
            assert!(error.contains(&format!("'{bad}'")), "{error}");
        }
    }

    #[test]
    fn more_than_ten_distinct_tags_are_refused() {
        let eleven: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
        let error = validate_tags(&eleven).unwrap_err();
        assert!(error.contains("'11'"), "{error}");
        assert!(validate_tags(&eleven[..10]).is_ok());
    }
}
