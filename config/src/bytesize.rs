//! Sizes written as `4MB`, `10MiB`, `512KB` or a plain number of bytes.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `4MB`, `10MiB`, `512kb`, `100` (bytes). KB/MB/GB are powers of 1024, as in
    /// Zeebe's configuration.
    pub fn parse(text: &str) -> Result<ByteSize, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("'{text}' is not a size (expected e.g. 4MB, 512KB, 100)"))?;
        let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size unit '{other}' in '{text}' (use B, KB, MB or GB)"
                ));
            }
        };
        number
            .checked_mul(factor)
            .map(ByteSize)
            .ok_or_else(|| format!("size '{text}' is too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b != 0 && b.is_multiple_of(1 << 30) {
            write!(f, "{}GB", b >> 30)
        } else if b != 0 && b.is_multiple_of(1 << 20) {
            write!(f, "{}MB", b >> 20)
        } else if b != 0 && b.is_multiple_of(1 << 10) {
            write!(f, "{}KB", b >> 10)
        } else {
            write!(f, "{b}B")
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(ByteSize(n)),
            Raw::Text(t) => ByteSize::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(ByteSize::parse("4MB").unwrap(), ByteSize(4 << 20));
        assert_eq!(ByteSize::parse("10 MiB").unwrap(), ByteSize(10 << 20));
        assert_eq!(ByteSize::parse("512kb").unwrap(), ByteSize(512 << 10));
        assert_eq!(ByteSize::parse("100").unwrap(), ByteSize(100));
        assert!(ByteSize::parse("12 parsecs").is_err());
        assert!(ByteSize::parse("MB").is_err());
        assert_eq!(ByteSize(4 << 20).to_string(), "4MB");
    }
}
