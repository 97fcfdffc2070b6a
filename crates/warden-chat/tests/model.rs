//! A Model's `timeout` (RUN-9), on a paused clock: an answer that stops streaming ends in one
//! error naming the Model and its `timeout`, without the test waiting for it.

use std::time::Duration;

use warden_chat::model::{Model, ModelError};
use warden_core::config::ModelSpec;
use warden_core::name::Name;
use warden_testkit::openai::{Reply, ScriptedModel};

#[tokio::test(start_paused = true)]
async fn an_answer_that_stops_streaming_times_out_naming_the_model() {
    let scripted = ScriptedModel::start(vec![Reply::Held(vec![
        "I have started".into(),
        " and never finish".into(),
    ])])
    .await;
    let spec = ModelSpec {
        name: Name::new("slow").unwrap(),
        url: scripted.url.clone(),
        model: "scripted".into(),
        api_key: None,
        max_tool_rounds: None,
        timeout: Some(Duration::from_secs(30)),
    };
    let model = Model::new(&spec, |_| Err("no keys here".into())).unwrap();
    let mut seen = String::new();
    let mut on_text = |piece: &str| seen.push_str(piece);
    let started = tokio::time::Instant::now();
    let error = model
        .answer(Vec::new(), Vec::new(), &mut on_text)
        .await
        .unwrap_err();
    assert_eq!(error, ModelError::Timeout(Duration::from_secs(30)));
    assert_eq!(error.kind(), "timeout");
    // The paused clock moved exactly to the deadline.
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    let explained = error.explain(model.name());
    assert!(
        explained.starts_with("Model `slow` did not finish its answer within 30s (its `timeout`)"),
        "{explained}"
    );
    assert!(!seen.contains("never finish"), "{seen}");
}
