//! USER: users of basic authentication made on partition 1 and distributed to every
//! partition. The password hash is in state and in the distributed commands only: the
//! response, the records as written and the history store never carry it.

use rill_engine_api::{Action, Engine};
use rill_history::search;
use rill_protocol::history::{Condition, HistoricUser, Search, SortBy, UserField};
use rill_protocol::value::{PasswordHash, UserRecord};
use rill_protocol::{
    Command, Intent, PartitionId, Position, Query, QueryResult, RecordType, RecordValue,
    RejectionType, UserCommand, ValueType,
};

use super::*;

const HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g";
const OTHER_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$b3RoZXJzYWx0$b3RoZXJoYXNob3RoZXJoYXNob3RoZXJoYXNob3RoZXI";

fn create(username: &str, hash: &str) -> Command {
    Command::User(UserCommand::Create {
        username: username.into(),
        name: "Jane Doe".into(),
        email: "jane@example.com".into(),
        password: PasswordHash(hash.into()),
    })
}

fn credentials(rule: &mut EngineRule, username: &str) -> Option<UserRecord> {
    let query = Query::UserCredentials {
        username: username.into(),
    };
    match rule.engine.query(&rule.state, &query).expect("query") {
        QueryResult::UserCredentials(user) => user,
        other => panic!("{other:?}"),
    }
}

fn history_users(rule: &EngineRule) -> Vec<HistoricUser> {
    let all = Search {
        filter: Vec::<(UserField, Condition)>::new(),
        sort: vec![SortBy {
            field: UserField::Username,
            descending: false,
        }],
        after: None,
        limit: 100,
        count_limit: 100,
    };
    search::<HistoricUser, _>(&rule.history, &all)
        .expect("search")
        .items
}

/// Every record of the log as written (completed from its draft), as JSON text.
fn written(rule: &EngineRule) -> String {
    rule.log
        .iter()
        .map(|(at, draft)| {
            let record = draft
                .clone()
                .into_record(Position(1), None, *at, rule.partition, "test");
            serde_json::to_string(&record).expect("json")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn sends(outcome: &Outcome) -> Vec<(PartitionId, Command)> {
    outcome
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { partition, command } => Some((*partition, command.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_user_is_created_once_and_its_hash_stays_in_state() {
    let mut rule = EngineRule::new();
    let created = rule.process(create("jane", HASH));
    let key = created.key();
    let RecordValue::User(answered) = created.value() else {
        panic!("{:?}", created.response);
    };
    assert_eq!(answered.username, "jane");
    assert_eq!(answered.user_key, key.get());
    assert!(answered.password.is_empty(), "the response has no hash");
    assert_eq!(
        created
            .records
            .iter()
            .map(|r| (r.record_type, r.intent))
            .collect::<Vec<_>>(),
        vec![
            (RecordType::Command, Intent::Create),
            (RecordType::Event, Intent::Created)
        ]
    );

    let stored = credentials(&mut rule, "jane").expect("stored");
    assert_eq!(stored.password, PasswordHash(HASH.into()));
    assert_eq!(stored.user_key, key.get());
    assert_eq!(credentials(&mut rule, "john"), None);

    // A taken username: ALREADY_EXISTS, the first user unchanged.
    let again = rule.process(create("jane", OTHER_HASH));
    assert_eq!(
        again.rejection().rejection_type,
        RejectionType::AlreadyExists
    );
    assert!(again.rejection().reason.contains("'jane'"));
    assert_eq!(
        credentials(&mut rule, "jane").unwrap().password,
        PasswordHash(HASH.into())
    );

    // The history store has the user, without any hash; no written record has one.
    let users = history_users(&rule);
    assert_eq!(users.len(), 1);
    assert_eq!(
        (
            users[0].key,
            users[0].username.as_str(),
            users[0].email.as_str()
        ),
        (key, "jane", "jane@example.com")
    );
    let text = written(&rule);
    assert!(text.contains("\"username\":\"jane\""), "{text}");
    assert!(!text.contains("argon2"), "{text}");
    assert!(
        !format!("{:?}", rule.log).contains("argon2"),
        "Debug hides the hash"
    );
    rule.assert_replay_matches();
}

#[test]
fn a_user_is_updated_and_deleted_by_username() {
    let mut rule = EngineRule::new();
    let key = rule.process(create("jane", HASH)).key();

    let renamed = rule.process(Command::User(UserCommand::Update {
        username: "jane".into(),
        name: Some("Jane Roe".into()),
        email: None,
        password: None,
    }));
    assert_eq!(renamed.key(), key);
    let kept = credentials(&mut rule, "jane").unwrap();
    assert_eq!(
        (kept.name.as_str(), kept.email.as_str(), &kept.password),
        ("Jane Roe", "jane@example.com", &PasswordHash(HASH.into())),
        "only the name changed"
    );
    rule.process(Command::User(UserCommand::Update {
        username: "jane".into(),
        name: None,
        email: Some(String::new()),
        password: Some(PasswordHash(OTHER_HASH.into())),
    }));
    let changed = credentials(&mut rule, "jane").unwrap();
    assert_eq!(changed.password, PasswordHash(OTHER_HASH.into()));
    assert_eq!(changed.email, "");
    assert_eq!(history_users(&rule)[0].name, "Jane Roe");

    let unknown = rule.process(Command::User(UserCommand::Update {
        username: "john".into(),
        name: Some("x".into()),
        email: None,
        password: None,
    }));
    assert_eq!(unknown.rejection().rejection_type, RejectionType::NotFound);

    let deleted = rule.process(Command::User(UserCommand::Delete {
        username: "jane".into(),
    }));
    assert_eq!(deleted.key(), key);
    assert_eq!(credentials(&mut rule, "jane"), None);
    assert!(history_users(&rule).is_empty());
    let twice = rule.process(Command::User(UserCommand::Delete {
        username: "jane".into(),
    }));
    assert_eq!(twice.rejection().rejection_type, RejectionType::NotFound);

    // The username is free again: a new user, a new key.
    let again = rule.process(create("jane", HASH)).key();
    assert_ne!(again, key);
    assert!(!written(&rule).contains("argon2"));
    rule.assert_replay_matches();
}

#[test]
fn bad_user_commands_are_rejected_and_change_nothing() {
    let mut rule = EngineRule::new();
    let empty_name = rule.process(create("", HASH));
    assert_eq!(
        empty_name.rejection().rejection_type,
        RejectionType::InvalidArgument
    );
    let no_hash = rule.process(create("jane", ""));
    assert_eq!(
        no_hash.rejection().rejection_type,
        RejectionType::InvalidArgument
    );
    assert_eq!(credentials(&mut rule, "jane"), None);

    let mut second = EngineRule::on_partition(2, 2);
    let elsewhere = second.process(create("jane", HASH));
    assert_eq!(
        elsewhere.rejection().rejection_type,
        RejectionType::InvalidArgument
    );
    assert!(elsewhere.rejection().reason.contains("partition 1"));
}

#[test]
fn users_reach_every_partition_with_their_hash_in_order() {
    let mut first = EngineRule::on_partition(1, 3);
    let mut second = EngineRule::on_partition(2, 3);
    let created = first.process(create("jane", HASH));
    let sent = sends(&created);
    assert_eq!(
        sent.iter().map(|(p, _)| p.get()).collect::<Vec<_>>(),
        vec![2, 3]
    );
    // The command to another partition carries the hash (it is no record).
    match &sent[0].1 {
        Command::FromPartition(c) => match &c.value {
            RecordValue::User(user) => assert_eq!(user.password, PasswordHash(HASH.into())),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    let applied = second.process(sent[0].1.clone());
    assert!(!applied.is_rejected(), "{:?}", applied.response);
    assert_eq!(
        credentials(&mut second, "jane"),
        credentials(&mut first, "jane"),
        "the same user, key and hash"
    );
    assert_eq!(history_users(&second).len(), 1);
    // A second delivery changes nothing.
    let again = second.process(sent[0].1.clone());
    assert_eq!(
        again.rejection().rejection_type,
        RejectionType::AlreadyExists
    );

    let updated = first.process(Command::User(UserCommand::Update {
        username: "jane".into(),
        name: None,
        email: None,
        password: Some(PasswordHash(OTHER_HASH.into())),
    }));
    let deleted = first.process(Command::User(UserCommand::Delete {
        username: "jane".into(),
    }));
    let to_second = |outcome: &Outcome| {
        sends(outcome)
            .into_iter()
            .find(|(p, _)| *p == PartitionId(2))
            .expect("a send to partition 2")
            .1
    };
    assert!(!second.process(to_second(&updated)).is_rejected());
    assert_eq!(
        credentials(&mut second, "jane").unwrap().password,
        PasswordHash(OTHER_HASH.into())
    );
    assert!(!second.process(to_second(&deleted)).is_rejected());
    assert_eq!(credentials(&mut second, "jane"), None);
    assert!(history_users(&second).is_empty());

    let events: Vec<Intent> = second
        .records()
        .events()
        .of_type(ValueType::User)
        .records
        .iter()
        .map(|r| r.intent)
        .collect();
    assert_eq!(
        events,
        vec![Intent::Created, Intent::Updated, Intent::Deleted]
    );
    assert!(!written(&second).contains("argon2"));
    assert!(!written(&first).contains("argon2"));
    first.assert_replay_matches();
    second.assert_replay_matches();
}
