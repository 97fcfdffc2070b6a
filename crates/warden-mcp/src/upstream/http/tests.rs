//! Tests of the HTTP exit: which upstreams it takes, answers and redirects.

use super::*;

#[test]
fn names_that_need_an_encoding_stay_with_rmcp() {
    assert!(bare_header_value("read_file"));
    assert!(bare_header_value("a b"));
    assert!(!bare_header_value(" lead"));
    assert!(!bare_header_value("trail\t"));
    assert!(!bare_header_value("caf\u{e9}"));
    assert!(!bare_header_value("=?base64?abc?="));
    assert!(!bare_header_value(""));
}

/// The exit is chosen per upstream: one tool that needs rmcp's encodings keeps every call
/// of its upstream on rmcp, as does a protocol with sessions.
#[test]
fn an_upstream_with_a_tool_that_needs_an_encoding_gets_no_http_exit() {
    let tool = |name: &str, schema: serde_json::Value| UpstreamTool {
        name: name.to_owned(),
        title: None,
        description: None,
        input_schema: warden_core::schema::SchemaText::new(schema.as_object().unwrap()),
        output_schema: None,
        annotations: None,
        icons: None,
        meta: None,
    };
    let plain = tool("read", serde_json::json!({"type": "object"}));
    let exit = |protocol: ProtocolVersion, tools: &[UpstreamTool]| {
        HttpExit::new(
            {
                crate::http_client::install_tls();
                reqwest::Client::new()
            },
            "http://127.0.0.1:1/mcp",
            &HashMap::new(),
            protocol,
            &rmcp::model::ClientConfig::default(),
            tools,
        )
    };
    assert!(exit(ProtocolVersion::V_2026_07_28, std::slice::from_ref(&plain)).is_some());
    assert!(exit(ProtocolVersion::V_2025_11_25, std::slice::from_ref(&plain)).is_none());
    let named = tool("caf\u{e9}", serde_json::json!({"type": "object"}));
    assert!(exit(ProtocolVersion::V_2026_07_28, &[plain.clone(), named]).is_none());
    let headed = tool(
        "find",
        serde_json::json!({"type": "object", "properties": {"q": {"type": "string", "x-mcp-header": "Query"}}}),
    );
    // A tool with parameter headers: this exit writes them itself.
    let with_headers = exit(ProtocolVersion::V_2026_07_28, &[plain, headed]).unwrap();
    let args = serde_json::json!({"q": "x y"});
    let written = param_headers(&with_headers.mirrored["find"], args.as_object()).unwrap();
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].0.as_str(), "mcp-param-query");
    assert_eq!(written[0].1.to_str().unwrap(), "x y");
}

#[test]
fn an_answer_is_matched_to_its_request() {
    let ok: Message = serde_json::from_str(
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
    )
    .unwrap();
    assert!(matches!(
        ok.answer(7),
        Ok(Ok(ServerResult::CallToolResult(_)))
    ));
    let other: Message =
        serde_json::from_str(r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#).unwrap();
    assert!(other.answer(7).is_err());
    let task: Message = serde_json::from_str(
        r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":null}}"#,
    )
    .unwrap();
    assert!(matches!(
        task.answer(7),
        Ok(Ok(ServerResult::CreateTaskResult(_)))
    ));
    let needs: Message = serde_json::from_str(
        r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":"s"}}"#,
    )
    .unwrap();
    assert!(matches!(
        needs.answer(7),
        Ok(Ok(ServerResult::InputRequiredResult(_)))
    ));
    let refused: Message =
        serde_json::from_str(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#)
            .unwrap();
    assert!(matches!(refused.answer(7), Ok(Err(HttpCallError::Refused(m))) if m.message == "bad"));
    let unreadable: Message = serde_json::from_str(
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}"#,
    )
    .unwrap();
    assert!(matches!(
        unreadable.answer(7),
        Ok(Err(HttpCallError::Refused(_)))
    ));
    let note: Message = serde_json::from_str(
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#,
    )
    .unwrap();
    assert!(note.answer(7).is_err());
}

/// The parameters written from the prepared `_meta` are what rmcp writes for the same
/// call with the fixed entries merged in (the form this path had before), in every case.
#[test]
fn call_params_are_what_rmcp_writes() {
    let exit = HttpExit::new(
        {
            crate::http_client::install_tls();
            reqwest::Client::new()
        },
        "http://127.0.0.1:1/mcp",
        &std::collections::HashMap::new(),
        ProtocolVersion::V_2026_07_28,
        &rmcp::model::ClientConfig::default(),
        &[],
    )
    .unwrap();
    let args = serde_json::json!({"key": "k", "n": [1, 2]});
    let bare = CallToolRequestParams::new("read");
    let full = CallToolRequestParams::new("read")
        .with_arguments(args.as_object().unwrap().clone())
        .with_input_responses([("q".to_owned(), serde_json::json!({"a": 1}))].into())
        .with_request_state("state".to_owned());
    let mut own_meta = full.clone();
    let mut meta = RequestMetaObject::default();
    meta.0.insert("trace".into(), serde_json::json!("t-1"));
    own_meta.meta = Some(meta);
    let token = ProgressToken(rmcp::model::NumberOrString::String("warden-3".into()));
    for params in [&bare, &full, &own_meta] {
        for progress in [None, Some(&token)] {
            let written = exit.call_meta(params, progress).unwrap();
            let ours = serde_json::to_value(CallParams::new(params, &written)).unwrap();
            let mut theirs = params.clone();
            let mut meta = theirs.meta.take().unwrap_or_default();
            meta.extend(exit.meta.clone());
            if let Some(token) = progress {
                meta.set_progress_token(token.clone());
            }
            theirs.meta = Some(meta);
            assert_eq!(ours, serde_json::to_value(&theirs).unwrap());
        }
    }
}

mod redirects {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::http::StatusCode as Status;
    use axum::response::IntoResponse;

    use super::*;

    /// An upstream whose `/mcp` answers `first` (a redirect to `/next`), and whose `/next`
    /// answers the call; counts the requests to `/mcp`.
    async fn upstream(first: Status) -> (String, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let app = axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(move || {
                    let counted = counted.clone();
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        (first, [(http::header::LOCATION, "/next")]).into_response()
                    }
                }),
            )
            .route(
                "/next",
                axum::routing::post(|| async {
                    (
                        [(http::header::CONTENT_TYPE, "application/json")],
                        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, hits)
    }

    fn exit(url: &str) -> HttpExit {
        let exit = HttpExit::new(
            crate::http_client::upstream_http_client().unwrap(),
            url,
            &std::collections::HashMap::new(),
            ProtocolVersion::V_2026_07_28,
            &rmcp::model::ClientConfig::default(),
            &[],
        )
        .unwrap();
        assert!(
            exit.h1.is_some(),
            "a plain http:// upstream goes through the pool"
        );
        exit
    }

    #[tokio::test]
    async fn a_307_is_repeated_by_reqwest_and_any_other_redirect_is_the_answer() {
        // 307: not executed, to be repeated: reqwest repeats it and follows it.
        let (url, hits) = upstream(Status::TEMPORARY_REDIRECT).await;
        let answer = exit(&url)
            .call(1, &CallToolRequestParams::new("t"), None, None)
            .await;
        assert!(matches!(answer, Ok(ServerResult::CallToolResult(_))));
        assert_eq!(
            hits.load(Ordering::SeqCst),
            2,
            "once by the pool, once by reqwest"
        );
        // 303: the upstream may have executed it; it is not sent again.
        let (url, hits) = upstream(Status::SEE_OTHER).await;
        let answer = exit(&url)
            .call(1, &CallToolRequestParams::new("t"), None, None)
            .await;
        assert!(
            matches!(&answer, Err(HttpCallError::Transport(m)) if m == "HTTP 303 See Other"),
            "{answer:?}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
}

/// Credentials a stored URL carried are sent as HTTP Basic authentication, never in place of
/// a configured `Authorization` header.
#[test]
fn a_stored_urls_credentials_never_replace_a_configured_authorization() {
    let mut http: HttpSpec = serde_json::from_value(serde_json::json!({
        "url": "http://svc:p%40ss@127.0.0.1:1/mcp"
    }))
    .unwrap();
    assert!(http.lift_url_credentials());
    assert_eq!(http.url, "http://127.0.0.1:1/mcp");
    let secrets = Secrets::new(None);
    let headers = configured_headers(&http, &secrets).unwrap();
    assert_eq!(
        headers.get(&http::header::AUTHORIZATION).unwrap(),
        "Basic c3ZjOnBAc3M="
    );
    http.headers
        .insert("authorization".into(), "Bearer configured".into());
    let headers = configured_headers(&http, &secrets).unwrap();
    assert_eq!(
        headers.get(&http::header::AUTHORIZATION).unwrap(),
        "Bearer configured"
    );
}

/// A client that declares no capability is told to the upstream as `{}`: what `call_meta`
/// looks for to send the `_meta` written once.
#[test]
fn no_capabilities_are_an_empty_object() {
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.set_client_capabilities(rmcp::model::ClientCapabilities::default());
    assert_eq!(meta.get(CLIENT_CAPABILITIES), Some(&serde_json::json!({})));
}
