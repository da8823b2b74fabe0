use super::*;
use crate::codec;

#[test]
fn a_reference_wraps_the_command_and_is_seen_through() {
    let cancel = Command::CancelProcessInstance {
        process_instance_key: Key(42),
    };
    assert_eq!(cancel.clone().referenced(None), cancel);
    let referenced = cancel.clone().referenced(Some(7));
    assert_eq!(referenced.operation_reference(), Some(7));
    assert_eq!(referenced.inner(), &cancel);
    assert_eq!(referenced.target_key(), Some(Key(42)));
    assert!(!referenced.is_never_rejected());
    let complete = Command::YieldJob { job_key: Key(3) }.referenced(Some(1));
    assert!(complete.is_never_rejected());

    let bytes = codec::encode(&referenced).unwrap();
    assert_eq!(codec::decode::<Command>(&bytes).unwrap(), referenced);
}

/// One command of every variant (and of every intent a variant has), with the value
/// type and intent of the record the engine writes for it.
fn every_command() -> Vec<(Command, ValueType, Intent)> {
    use ValueType as V;
    let key = Key(7);
    let json = JsonValue::empty_object;
    let create = |await_result| {
        Command::CreateProcessInstance(CreateProcessInstance {
            process: ProcessSelector::ByKey(key),
            variables: json(),
            await_result,
            fetch_variables: Vec::new(),
            tags: Vec::new(),
        })
    };
    let update_job = |retries, timeout| {
        Command::UpdateJob(UpdateJob {
            job_key: key,
            retries,
            timeout,
        })
    };
    let assign = |allow_override| {
        Command::UserTask(UserTaskCommand::Assign {
            user_task_key: key,
            assignee: "demo".into(),
            action: String::new(),
            allow_override,
        })
    };
    let signal = crate::value::SignalRecord {
        signal_name: "s".into(),
        variables: json(),
        tenant_id: String::new(),
    };
    vec![
        (
            Command::Deploy {
                resources: Vec::new(),
            },
            V::Deployment,
            Intent::Create,
        ),
        (create(false), V::ProcessInstanceCreation, Intent::Create),
        (
            create(true),
            V::ProcessInstanceCreation,
            Intent::CreateWithAwaitingResult,
        ),
        (
            Command::CancelProcessInstance {
                process_instance_key: key,
            },
            V::ProcessInstance,
            Intent::Cancel,
        ),
        (
            Command::ActivateJobs(ActivateJobs {
                job_type: "t".into(),
                worker: "w".into(),
                timeout: 1,
                max_jobs: 1,
                fetch_variables: Vec::new(),
            }),
            V::JobBatch,
            Intent::Activate,
        ),
        (
            Command::CompleteJob {
                job_key: key,
                variables: json(),
                result: Default::default(),
            },
            V::Job,
            Intent::Complete,
        ),
        (
            Command::FailJob(FailJob {
                job_key: key,
                retries: 0,
                error_message: String::new(),
                retry_backoff: 0,
                variables: json(),
            }),
            V::Job,
            Intent::Fail,
        ),
        (
            Command::ThrowError(ThrowError {
                job_key: key,
                error_code: "e".into(),
                error_message: String::new(),
                variables: json(),
            }),
            V::Job,
            Intent::ThrowError,
        ),
        (update_job(Some(1), Some(1)), V::Job, Intent::Update),
        (update_job(Some(1), None), V::Job, Intent::UpdateRetries),
        (update_job(None, Some(1)), V::Job, Intent::UpdateTimeout),
        (
            Command::PublishMessage(PublishMessage {
                name: "m".into(),
                correlation_key: "c".into(),
                time_to_live: 0,
                message_id: String::new(),
                variables: json(),
            }),
            V::Message,
            Intent::Publish,
        ),
        (
            Command::ResolveIncident { incident_key: key },
            V::Incident,
            Intent::Resolve,
        ),
        (
            Command::SetVariables(SetVariables {
                element_instance_key: key,
                variables: json(),
                local: false,
            }),
            V::VariableDocument,
            Intent::Update,
        ),
        (
            Command::TriggerTimer { timer_key: key },
            V::Timer,
            Intent::Trigger,
        ),
        (
            Command::TimeOutJob { job_key: key },
            V::Job,
            Intent::TimeOut,
        ),
        (
            Command::RecurJob { job_key: key },
            V::Job,
            Intent::RecurAfterBackoff,
        ),
        (
            Command::ExpireMessage { message_key: key },
            V::Message,
            Intent::Expire,
        ),
        (
            Command::ExpireInstanceSummary {
                process_instance_key: key,
            },
            V::ProcessInstance,
            Intent::Delete,
        ),
        (
            Command::FromPartition(Box::new(InterPartitionCommand {
                source: PartitionId(2),
                sequence: 1,
                value_type: V::Signal,
                intent: Intent::Broadcast,
                key,
                value: signal.clone().into(),
            })),
            V::CommandDistribution,
            Intent::Distribute,
        ),
        (
            Command::AcknowledgeSend {
                target: PartitionId(2),
                sequence: 1,
            },
            V::CommandDistribution,
            Intent::Acknowledge,
        ),
        (
            Command::BroadcastSignal(BroadcastSignal {
                signal_name: signal.signal_name,
                variables: json(),
            }),
            V::Signal,
            Intent::Broadcast,
        ),
        (assign(false), V::UserTask, Intent::Claim),
        (assign(true), V::UserTask, Intent::Assign),
        (
            Command::UserTask(UserTaskCommand::Update {
                user_task_key: key,
                changes: UserTaskChanges::default(),
                action: String::new(),
            }),
            V::UserTask,
            Intent::Update,
        ),
        (
            Command::UserTask(UserTaskCommand::Complete {
                user_task_key: key,
                variables: json(),
                action: String::new(),
            }),
            V::UserTask,
            Intent::Complete,
        ),
        (
            Command::EvaluateDecision(EvaluateDecision {
                decision: DecisionSelector::ByKey(key),
                variables: json(),
            }),
            V::DecisionEvaluation,
            Intent::Evaluate,
        ),
        (
            Command::ModifyProcessInstance(ModifyProcessInstance {
                process_instance_key: key,
                activate_instructions: Vec::new(),
                terminate_instructions: Vec::new(),
            }),
            V::ProcessInstanceModification,
            Intent::Modify,
        ),
        (
            Command::DeleteResource { resource_key: key },
            V::ResourceDeletion,
            Intent::Delete,
        ),
        (
            Command::RedistributeDeployments {
                first: PartitionId(2),
                last: PartitionId(3),
            },
            V::CommandDistribution,
            Intent::Distribute,
        ),
        (
            Command::MigrateProcessInstance(MigrateProcessInstance {
                process_instance_key: key,
                target_process_definition_key: key,
                mapping_instructions: Vec::new(),
            }),
            V::ProcessInstanceMigration,
            Intent::Migrate,
        ),
        (
            Command::ActivateAdHocSubProcessActivities(ActivateAdHocSubProcessActivities {
                ad_hoc_sub_process_instance_key: key,
                elements: Vec::new(),
                cancel_remaining_instances: false,
            }),
            V::AdHocSubProcessInstruction,
            Intent::Activate,
        ),
        (Command::YieldJob { job_key: key }, V::Job, Intent::Yield),
        (
            Command::User(UserCommand::Create {
                username: "u".into(),
                name: String::new(),
                email: String::new(),
                password: Default::default(),
            }),
            V::User,
            Intent::Create,
        ),
        (
            Command::User(UserCommand::Update {
                username: "u".into(),
                name: None,
                email: None,
                password: None,
            }),
            V::User,
            Intent::Update,
        ),
        (
            Command::User(UserCommand::Delete {
                username: "u".into(),
            }),
            V::User,
            Intent::Delete,
        ),
    ]
}

/// What a replica of the first release cannot read waits for engine version 2: the
/// user commands, a user distributed to another partition, and anything wrapped in
/// `Referenced`; the rest is written at version 1.
#[test]
fn commands_added_since_the_first_release_need_engine_version_2() {
    let user = Command::User(UserCommand::Delete {
        username: "demo".to_owned(),
    });
    assert_eq!(user.required_engine_version(), 2);
    let plain = every_command()
        .into_iter()
        .map(|(command, ..)| command)
        .find(|command| matches!(command, Command::CreateProcessInstance(_)))
        .expect("a create");
    assert_eq!(plain.required_engine_version(), 1);
    assert_eq!(
        plain.clone().referenced(Some(3)).required_engine_version(),
        2
    );
    let carried = every_command()
        .into_iter()
        .find_map(|(command, ..)| match command {
            Command::FromPartition(carried) => Some(carried),
            _ => None,
        })
        .expect("a command from another partition");
    let distributed = |value_type| {
        let mut carried = carried.clone();
        carried.value_type = value_type;
        Command::FromPartition(carried)
    };
    assert_eq!(distributed(ValueType::User).required_engine_version(), 2);
    assert_eq!(
        distributed(ValueType::Deployment).required_engine_version(),
        1
    );
}

#[test]
fn every_command_names_the_value_type_and_intent_of_its_record() {
    let commands = every_command();
    // Every variant is here: their encoding indexes (after the format byte) are
    // 0 to the last, but for `Referenced`, which wraps the others.
    let mut indexes: Vec<u8> = commands
        .iter()
        .map(|(command, ..)| codec::encode(command).unwrap()[1])
        .collect();
    let referenced = codec::encode(&commands[0].0.clone().referenced(Some(1))).unwrap()[1];
    indexes.push(referenced);
    indexes.sort_unstable();
    indexes.dedup();
    let last = *indexes.last().unwrap();
    assert_eq!(indexes, (0..=last).collect::<Vec<u8>>());

    for (command, value_type, intent) in commands {
        assert_eq!(command.value_type(), value_type, "{command:?}");
        assert_eq!(command.intent(), intent, "{command:?}");
        let referenced = command.referenced(Some(3));
        assert_eq!(referenced.value_type(), value_type, "{referenced:?}");
        assert_eq!(referenced.intent(), intent, "{referenced:?}");
    }
}

#[test]
fn existing_commands_keep_their_encoding() {
    // The wrapper went in last: a command's variant index (after the format byte)
    // is what it was before.
    let yield_job = codec::encode(&Command::YieldJob { job_key: Key(1) }).unwrap();
    assert_eq!(yield_job[1], 26);
    let referenced =
        codec::encode(&Command::YieldJob { job_key: Key(1) }.referenced(Some(5))).unwrap();
    assert_eq!(referenced[1], 27);
    let user = codec::encode(&Command::User(UserCommand::Delete {
        username: "u".into(),
    }))
    .unwrap();
    assert_eq!(user[1], 28);
    let deploy = codec::encode(&Command::Deploy {
        resources: Vec::new(),
    })
    .unwrap();
    assert_eq!(deploy[1], 0);
}
