//! AWS Signature Version 4 for the S3 store's requests, header-signed, as AWS documents
//! it ("Authenticating Requests: Using the Authorization Header"): a canonical request,
//! a string to sign over its SHA-256, and an HMAC-SHA256 chain from the secret key over
//! the date, region, service and `aws4_request`.

use ring::{digest, hmac};

use super::format::hex;

/// An access key and its secret (and, for temporary credentials, a session token).
#[derive(Clone)]
pub(super) struct Credentials {
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    // The secret and the token never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// A request as it is signed. `path` and every query name and value are given as sent:
/// already encoded with [`uri_encode`].
pub(super) struct SignedRequest<'a> {
    pub method: &'a str,
    /// The `Host` header: `host` or `host:port`.
    pub host: &'a str,
    pub path: &'a str,
    pub query: &'a [(String, String)],
    /// More headers to sign: lower-case names, values as sent.
    pub headers: &'a [(&'a str, String)],
    /// Lower-case hex SHA-256 of the body.
    pub payload_sha256: &'a str,
}

/// The SHA-256 of `bytes` as lower-case hex.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, bytes).as_ref())
}

/// RFC 3986 percent-encoding as SigV4 wants it: everything but `A-Za-z0-9-_.~` is
/// encoded, with upper-case hex; `/` too unless `keep_slash`.
pub(super) fn uri_encode(text: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The query string of `pairs` (encoded already), sorted by name and value, as it is
/// both sent and signed.
pub(super) fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = pairs.iter().collect();
    sorted.sort();
    sorted
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The headers to send with `request` so that S3 accepts it: `x-amz-date`,
/// `x-amz-content-sha256`, the session token if any, and `authorization`. `amz_date` is
/// the time as `YYYYMMDDTHHMMSSZ`.
pub(super) fn sign(
    credentials: &Credentials,
    region: &str,
    amz_date: &str,
    request: &SignedRequest<'_>,
) -> Vec<(&'static str, String)> {
    let mut added: Vec<(&'static str, String)> = vec![
        ("x-amz-content-sha256", request.payload_sha256.to_owned()),
        ("x-amz-date", amz_date.to_owned()),
    ];
    if let Some(token) = &credentials.session_token {
        added.push(("x-amz-security-token", token.clone()));
    }
    let mut headers: Vec<(&str, String)> = vec![("host", request.host.to_owned())];
    headers.extend(added.iter().map(|(name, value)| (*name, value.clone())));
    headers.extend(request.headers.iter().cloned());
    headers.sort_by(|a, b| a.0.cmp(b.0));
    let canonical_headers: String = headers
        .iter()
        .map(|(name, value)| format!("{name}:{}\n", value.trim()))
        .collect();
    let signed_headers = headers
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(";");
    let canonical_request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        request.method,
        request.path,
        canonical_query(request.query),
        request.payload_sha256
    );
    let date = &amz_date[..8];
    let scope = format!("{date}/{region}/s3/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mut key = format!("AWS4{}", credentials.secret_key).into_bytes();
    for part in [date, region, "s3", "aws4_request"] {
        key = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), part.as_bytes())
            .as_ref()
            .to_vec();
    }
    let signature = hex(hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, &key),
        string_to_sign.as_bytes(),
    )
    .as_ref());
    added.push((
        "authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, \
             Signature={signature}",
            credentials.access_key
        ),
    ));
    added
}

/// `YYYYMMDDTHHMMSSZ` of a time in epoch milliseconds.
pub(super) fn amz_date(epoch_millis: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(epoch_millis.max(0) as u64);
    // `2026-12-06T17:03:06Z` without its separators.
    humantime::format_rfc3339_seconds(time)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of AWS's SigV4 documentation for S3 ("Example: GET Object"): its
    /// documented credentials, request and signature.
    #[test]
    fn the_documented_get_object_example_signs_as_documented() {
        let credentials = Credentials {
            access_key: "AKIAIOSFODNN7EXAMPLE".to_owned(),
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned(),
            session_token: None,
        };
        let empty = sha256_hex(b"");
        let headers = sign(
            &credentials,
            "us-east-1",
            "20130524T000000Z",
            &SignedRequest {
                method: "GET",
                host: "examplebucket.s3.amazonaws.com",
                path: "/test.txt",
                query: &[],
                headers: &[("range", "bytes=0-9".to_owned())],
                payload_sha256: &empty,
            },
        );
        let authorization = &headers
            .iter()
            .find(|(name, _)| *name == "authorization")
            .unwrap()
            .1;
        assert_eq!(
            authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn names_and_values_are_encoded_and_sorted() {
        assert_eq!(uri_encode("a b/c~d*é", true), "a%20b/c~d%2A%C3%A9");
        assert_eq!(uri_encode("x/y", false), "x%2Fy");
        let query = canonical_query(&[
            ("prefix".to_owned(), "b".to_owned()),
            ("list-type".to_owned(), "2".to_owned()),
            ("delimiter".to_owned(), "%2F".to_owned()),
        ]);
        assert_eq!(query, "delimiter=%2F&list-type=2&prefix=b");
        assert_eq!(amz_date(1_369_353_600_000), "20130524T000000Z");
    }
}
