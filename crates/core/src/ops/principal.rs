//! Who calls the door: direct access to the ledger, or the holder of one of its tokens
//! (§15). `token::authenticate` turns a secret into one; `door::call` decides what each
//! may do.

use super::Caller;
use crate::model::Channel;

/// Who calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Direct access to the ledger: its file, or a PostgreSQL role. Everything, as the
    /// caller (and, for votes and groups, the `Identity` in the request) says.
    Direct(Caller),
    /// An agent token (§15).
    Agent(AgentToken),
    /// A person token (§15).
    Person(PersonToken),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentToken {
    /// The token's name: who logged what it logs.
    pub name: String,
    /// Stage patterns: a stage's name, or a prefix ending in `*`; none: every stage.
    pub stages: Vec<String>,
}

impl AgentToken {
    /// Whether `stage` is within the token's stages.
    pub fn may_see(&self, stage: &str) -> bool {
        let stage = stage.trim();
        self.stages.is_empty()
            || self.stages.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => stage.starts_with(prefix),
                None => p == stage,
            })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonToken {
    pub name: String,
    /// Who it acts as.
    pub person: String,
    /// Whether it may answer and vote as them: every person token but an MCP host's OAuth
    /// grant without `questions:answer` (§17).
    pub answers: bool,
}

impl Principal {
    /// Whether it may answer, vote or import answers: a person's acts, which an agent
    /// token never makes. A front end hides what it may not do; `call` refuses it.
    pub fn answers(&self) -> bool {
        match self {
            Principal::Agent(_) => false,
            Principal::Person(p) => p.answers,
            Principal::Direct(_) => true,
        }
    }

    /// Who a change this principal makes is recorded as.
    pub fn caller(&self) -> Caller {
        match self {
            Principal::Direct(caller) => caller.clone(),
            Principal::Agent(agent) => Caller {
                by: Some(agent.name.clone()),
                channel: Channel::Api,
            },
            Principal::Person(person) => Caller {
                by: Some(person.person.clone()),
                channel: Channel::Api,
            },
        }
    }
}
