//! The channel suite (channel_suite.rs) run against each channel: one line a channel.

use crate::channel_suite::channel_suite;

channel_suite!(telegram, crate::relay::Telegram);
channel_suite!(slack, crate::relay_slack::Slack);
channel_suite!(email, crate::relay_email::Email);
channel_suite!(matrix, crate::relay_matrix::Matrix);
