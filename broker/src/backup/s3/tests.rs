use super::*;

fn config(endpoint: Option<&str>, bucket: &str) -> rill_config::S3BackupConfig {
    rill_config::S3BackupConfig {
        bucket: Some(bucket.to_owned()),
        base_path: Some("/cluster-a/".to_owned()),
        endpoint: endpoint.map(str::to_owned),
        ..Default::default()
    }
}

#[test]
fn custom_endpoints_are_path_style_and_aws_is_virtual_hosted() {
    let env = Environment::of(&[("AWS_REGION", "eu-west-1")]);
    let store = S3Store::from_config(&config(Some("http://127.0.0.1:9000"), "rill"), &env).unwrap();
    assert_eq!(
        store.inner.bucket_url.as_str(),
        "http://127.0.0.1:9000/rill/"
    );
    assert_eq!(store.inner.host, "127.0.0.1:9000");
    assert_eq!(store.inner.region, "eu-west-1");
    assert_eq!(store.location(), "s3://rill/cluster-a/");
    assert_eq!(
        store.part_key(7, 2, STATUS),
        "cluster-a/7/partition-2/status.json"
    );
    let aws = S3Store::from_config(&config(None, "rill"), &env).unwrap();
    assert_eq!(
        aws.inner.bucket_url.as_str(),
        "https://rill.s3.eu-west-1.amazonaws.com/"
    );
    assert_eq!(aws.inner.host, "rill.s3.eu-west-1.amazonaws.com");
    let dotted = S3Store::from_config(&config(None, "a.b"), &Environment::default()).unwrap();
    assert_eq!(
        dotted.inner.bucket_url.as_str(),
        "https://s3.us-east-1.amazonaws.com/a.b/"
    );
    let error = S3Store::from_config(&config(Some("ftp://x"), "rill"), &env).unwrap_err();
    assert!(error.starts_with("backup.s3.endpoint"), "{error}");
}

#[test]
fn credentials_come_from_the_settings_else_the_environment() {
    let env = Environment::of(&[
        ("AWS_ACCESS_KEY_ID", "from-env"),
        ("AWS_SECRET_ACCESS_KEY", "env-secret"),
        ("AWS_SESSION_TOKEN", "token"),
    ]);
    let mut settings = config(Some("http://127.0.0.1:9000"), "rill");
    let store = S3Store::from_config(&settings, &env).unwrap();
    let credentials = store.inner.credentials.clone().unwrap();
    assert_eq!(credentials.access_key, "from-env");
    assert_eq!(credentials.session_token.as_deref(), Some("token"));
    assert!(!format!("{store:?}").contains("env-secret"));
    settings.access_key = Some("from-settings".to_owned());
    settings.secret_key = Some("settings-secret".to_owned());
    let store = S3Store::from_config(&settings, &env).unwrap();
    let credentials = store.inner.credentials.clone().unwrap();
    assert_eq!(credentials.access_key, "from-settings");
    assert_eq!(credentials.session_token, None);
    let none = S3Store::from_config(
        &config(Some("http://127.0.0.1:9000"), "rill"),
        &Environment::default(),
    )
    .unwrap();
    let error = none.check().unwrap_err();
    assert!(error.contains("AWS_ACCESS_KEY_ID"), "{error}");
}

#[test]
fn s3_errors_are_read_from_their_body() {
    let body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code>\
                 <Message>The specified bucket does not exist</Message></Error>";
    assert_eq!(
        error_of(body),
        (
            "NoSuchBucket".to_owned(),
            "The specified bucket does not exist".to_owned()
        )
    );
    assert_eq!(error_of(b"not xml"), (String::new(), String::new()));
}
