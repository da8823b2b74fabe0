//! A certificate's validity period, read from its DER: just enough of X.509's structure
//! to reach `tbsCertificate.validity` (RFC 5280, 4.1), so that an expired certificate is
//! refused at start with its date. Everything else is left to webpki at handshake time.

/// `notBefore` and `notAfter`, in seconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Validity {
    pub not_before: i64,
    pub not_after: i64,
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// One DER element: its tag, its contents and what follows it.
fn element(input: &[u8]) -> Result<(u8, &[u8], &[u8]), String> {
    let (&tag, rest) = input.split_first().ok_or("truncated")?;
    let (&first, mut rest) = rest.split_first().ok_or("truncated")?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return Err("bad length".to_owned());
        }
        let (bytes, after) = rest.split_at(octets);
        rest = after;
        bytes.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b))
    };
    if rest.len() < length {
        return Err("truncated".to_owned());
    }
    let (contents, after) = rest.split_at(length);
    Ok((tag, contents, after))
}

fn expect<'a>(input: &'a [u8], tag: u8, what: &str) -> Result<(&'a [u8], &'a [u8]), String> {
    match element(input)? {
        (found, contents, rest) if found == tag => Ok((contents, rest)),
        (found, _, _) => Err(format!("expected {what}, found tag {found:#04x}")),
    }
}

/// Reads the validity of a DER certificate; an error says what is malformed.
pub(crate) fn validity(der: &[u8]) -> Result<Validity, String> {
    let (certificate, _) = expect(der, SEQUENCE, "a certificate")?;
    let (tbs, _) = expect(certificate, SEQUENCE, "tbsCertificate")?;
    let mut rest = tbs;
    if rest.first() == Some(&VERSION) {
        rest = element(rest)?.2;
    }
    let (_, rest) = expect(rest, INTEGER, "serialNumber")?;
    let (_, rest) = expect(rest, SEQUENCE, "signature")?;
    let (_, rest) = expect(rest, SEQUENCE, "issuer")?;
    let (validity, _) = expect(rest, SEQUENCE, "validity")?;
    let (not_before, rest) = time(validity)?;
    let (not_after, _) = time(rest)?;
    Ok(Validity {
        not_before,
        not_after,
    })
}

/// A UTCTime (`YYMMDDHHMMSSZ`) or GeneralizedTime (`YYYYMMDDHHMMSSZ`), as RFC 5280 allows
/// them: in UTC, with seconds, without fractions.
fn time(input: &[u8]) -> Result<(i64, &[u8]), String> {
    let (tag, contents, rest) = element(input)?;
    let text = std::str::from_utf8(contents).map_err(|_| "a time that is not ASCII")?;
    let digits = text
        .strip_suffix('Z')
        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("a time that is not in UTC: {text:?}"))?;
    let number =
        |range: std::ops::Range<usize>| -> i64 { digits[range].parse().unwrap_or_default() };
    let (year, offset) = match (tag, digits.len()) {
        (UTC_TIME, 12) => {
            let yy = number(0..2);
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, 2)
        }
        (GENERALIZED_TIME, 14) => (number(0..4), 4),
        _ => return Err(format!("an unsupported time {text:?}")),
    };
    let month = number(offset..offset + 2);
    let day = number(offset + 2..offset + 4);
    let (hour, minute, second) = (
        number(offset + 4..offset + 6),
        number(offset + 6..offset + 8),
        number(offset + 8..offset + 10),
    );
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(format!("an invalid time {text:?}"));
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Ok((seconds, rest))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// `seconds` since the epoch as `2026-12-06T10:54:44Z`, for messages.
pub(crate) fn show(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    // The inverse of `days_from_civil`.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert_both_ways() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for seconds in [0, 951_782_400, 1_798_761_600, 4_102_444_799, -86_400] {
            let shown = show(seconds);
            let (date, clock) = shown.split_once('T').expect("T");
            let parts: Vec<i64> = date.split('-').map(|p| p.parse().expect("n")).collect();
            let clock: Vec<i64> = clock
                .trim_end_matches('Z')
                .split(':')
                .map(|p| p.parse().expect("n"))
                .collect();
            let back = days_from_civil(parts[0], parts[1], parts[2]) * 86_400
                + clock[0] * 3600
                + clock[1] * 60
                + clock[2];
            assert_eq!(back, seconds, "{shown}");
        }
        assert_eq!(show(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn times_of_both_kinds_parse_and_nonsense_does_not() {
        let utc = [
            UTC_TIME, 13, b'4', b'9', b'1', b'2', b'3', b'1', b'2', b'3', b'5', b'9', b'5', b'9',
            b'Z',
        ];
        assert_eq!(
            time(&utc).expect("utc").0,
            days_from_civil(2049, 12, 31) * 86_400 + 86_399
        );
        let mut old = utc;
        old[2] = b'5';
        old[3] = b'0';
        assert_eq!(
            time(&old).expect("utc").0,
            days_from_civil(1950, 12, 31) * 86_400 + 86_399
        );
        let generalized = b"\x18\x0f20900101000000Z";
        assert_eq!(
            time(generalized).expect("generalized").0,
            days_from_civil(2090, 1, 1) * 86_400
        );
        assert!(time(b"\x18\x0f20901301000000Z").is_err());
        assert!(time(b"\x17\x0d491231235959+").is_err());
        assert!(validity(b"\x30\x03\x02\x01\x01").is_err());
        assert!(validity(b"").is_err());
        assert!(validity(b"\x30\x84\xff\xff\xff\xff").is_err());
    }
}
