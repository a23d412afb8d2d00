/*
 * C test of the agent parts of the pi-agent C API added over core's reshaped agent, run by
 * ffi/tests/c_programs.rs (natively and under valgrind), offline on the faux provider: runs as
 * values (pi_agent_run_*), prompts with images and messages, tools with label, execution mode
 * and prepare_arguments, getters and settings after construction (request options, watchdogs),
 * the abort state, subscriptions with the partial message, the convert_to_llm, get_api_key and
 * stream_fn hooks, hook contexts and results as core JSON, a blocking hook cut short by an
 * abort, pi_agent_free from inside callbacks (deferred; issue 9's use-after-free) and of an
 * agent whose run nobody reads.
 *
 *   ffi_agent_run_test
 *
 * Exits 0 when every check passed; on the first failed check it prints it and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL_CALL(id, name, args)                                                    \
    "{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":" args \
    "}"

static const char *OBJECT_SCHEMA = "{\"type\":\"object\"}";

/* A text the faux provider streams for minutes when paced at one token a second, so that only
 * an abort or a watchdog ends its stream early. */
static char LONG_TEXT[2048];

static void init_long_text(void) {
    for (size_t i = 0; i + 1 < sizeof LONG_TEXT; i++) LONG_TEXT[i] = (char)('a' + i % 26);
    LONG_TEXT[sizeof LONG_TEXT - 1] = '\0';
}

/* A paced faux provider with one long response queued (and `then`, if not NULL, after it). */
static pi_faux *slow_faux(const char *then) {
    pi_faux *faux = NULL;
    OK(pi_faux_new_with_options("{\"tokensPerSecond\":1}", &faux));
    char *script = malloc(sizeof LONG_TEXT + 64);
    snprintf(script, sizeof LONG_TEXT + 64, "{\"content\":\"%s\"}", LONG_TEXT);
    OK(pi_faux_push_json(faux, script));
    free(script);
    if (then != NULL) OK(pi_faux_push_json(faux, then));
    return faux;
}

static atomic_int freed; /* free_user_data calls of count_free */

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&freed, 1);
}

typedef struct {
    pi_faux *faux;
    pi_model *model;
    pi_agent *agent;
} fixture;

static void setup_with(fixture *f, pi_faux *faux, const char *script, const char *settings) {
    f->faux = faux;
    if (script != NULL) OK(pi_faux_push_json(f->faux, script));
    OK(pi_faux_model(f->faux, &f->model));
    OK(pi_agent_new(f->model, "", settings, &f->agent));
}

static void setup(fixture *f, const char *script, const char *settings) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    setup_with(f, faux, script, settings);
}

static void teardown(fixture *f) {
    pi_agent_free(f->agent);
    pi_model_free(f->model);
    pi_faux_free(f->faux);
}

static char *contexts_json(pi_faux *faux) {
    char *json = NULL;
    OK(pi_faux_contexts_json(faux, &json));
    return json;
}

/* Answers "echo:" followed by its arguments JSON. */
static int32_t echo_tool(void *user_data, pi_tool_call *call) {
    (void)user_data;
    pi_str args = pi_tool_call_arguments_json(call);
    char text[256];
    snprintf(text, sizeof text, "echo:%.*s", (int)args.len, args.data);
    OK(pi_tool_call_set_text(call, text));
    return 0;
}

/* A gate a callback waits at: `entered` once it waits, it returns once `released`. */
typedef struct {
    atomic_int entered;
    atomic_int released;
    pi_agent *agent;
} gate;

static void wait_at(gate *g) {
    atomic_store(&g->entered, 1);
    /* Hang guard only: the test releases it. */
    for (int i = 0; i < 60000 && !atomic_load(&g->released); i++) sleep_ms(1);
    CHECK(atomic_load(&g->released));
}

static int32_t gated_tool(void *user_data, pi_tool_call *call) {
    wait_at(user_data);
    OK(pi_tool_call_set_text(call, "gated done"));
    return 0;
}

/* ------------------------------------------------------------ runs as values */

static atomic_int subscriber_events;
static void count_events(void *user_data, const pi_agent_event *event) {
    (void)user_data;
    (void)event;
    atomic_fetch_add(&subscriber_events, 1);
}

static void test_run_pull(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("c1", "gated", "{\"x\":1}") "]},{\"content\":\"Done.\"}]",
          NULL);
    static gate g;
    OK(pi_agent_add_tool(f.agent, "gated", "Waits", OBJECT_SCHEMA, gated_tool, &g, NULL));
    uint64_t id;
    OK(pi_agent_subscribe(f.agent, count_events, NULL, NULL, &id));

    pi_agent_run *run = NULL;
    EXPECT_ERROR(pi_agent_run_open(f.agent, NULL, &run), PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_agent_run_open(f.agent, "Go", &run));
    CHECK(wait_for(&g.entered));
    pi_agent_run *second = NULL;
    EXPECT_ERROR(pi_agent_run_open(f.agent, "again", &second), PI_ERROR_KIND_ALREADY_RUNNING);
    EXPECT_ERROR(pi_agent_run_open_continue(f.agent, &second), PI_ERROR_KIND_ALREADY_RUNNING);
    CHECK(second == NULL);
    /* The transcript cannot change under a run. */
    EXPECT_ERROR(pi_agent_append_message_json(
                     f.agent, "{\"role\":\"user\",\"content\":\"late\",\"timestamp\":0}"),
                 PI_ERROR_KIND_ALREADY_RUNNING);
    atomic_store(&g.released, 1);

    pi_agent_event event;
    int events = 0, starts = 0, deltas = 0;
    char text[64] = "";
    bool saw_end = false;
    while (pi_agent_run_next(run, &event)) {
        events++;
        CHECK(!saw_end); /* agent_end is the last event */
        if (event.kind == PI_AGENT_EVENT_KIND_AGENT_START) starts++;
        if (event.kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE &&
            event.message_event_kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
            deltas++;
            strncat(text, event.delta.data, event.delta.len);
            CHECK(!str_contains(event.json, "\"message\":"));
        }
        if (event.kind == PI_AGENT_EVENT_KIND_AGENT_END) {
            saw_end = true;
            CHECK(str_contains(event.json, "Done."));
            CHECK(!event.aborted);
        }
    }
    CHECK(saw_end && starts == 1 && deltas > 0);
    CHECK(strcmp(text, "Done.") == 0);
    CHECK(!pi_agent_run_next(run, &event));
    CHECK(atomic_load(&subscriber_events) == events); /* the same events, in the same order */

    char *json = NULL;
    OK(pi_agent_run_result_json(run, &json));
    CHECK(json[0] == '[');
    CHECK(in_order(json, "Go", "gated done"));
    CHECK(in_order(json, "gated done", "Done."));
    char *again = NULL;
    OK(pi_agent_run_result_json(run, &again));
    CHECK(strcmp(json, again) == 0);
    pi_string_free(json);
    pi_string_free(again);
    pi_agent_run_free(run);
    teardown(&f);
}

/* A tool that waits for the result of the run that called it would wait for itself: refused
 * (it used to hang). */
static _Atomic(pi_agent_run *) own_run;
static atomic_int own_run_refused;

static int32_t wait_for_own_run(void *user_data, pi_tool_call *call) {
    (void)user_data;
    /* The run handle is written when pi_agent_run_open returns (hang guard only). */
    for (int i = 0; i < 60000 && atomic_load(&own_run) == NULL; i++) sleep_ms(1);
    char *json = NULL;
    EXPECT_ERROR(pi_agent_run_result_json(atomic_load(&own_run), &json),
                 PI_ERROR_KIND_CALLED_FROM_CALLBACK);
    CHECK(json == NULL);
    EXPECT_ERROR(pi_agent_run_output_json(atomic_load(&own_run), &json),
                 PI_ERROR_KIND_CALLED_FROM_CALLBACK);
    /* Reading the run's events from its own tool never waits: it gets those already there,
     * then `false` (it used to wait for events that come only after this tool returns). */
    pi_agent_event event;
    int read = 0;
    while (pi_agent_run_next(atomic_load(&own_run), &event)) {
        CHECK(event.kind != PI_AGENT_EVENT_KIND_AGENT_END);
        read++;
    }
    CHECK(read < 1000);
    atomic_fetch_add(&own_run_refused, 1);
    OK(pi_tool_call_set_text(call, "refused"));
    return 0;
}

/* An event callback cannot wait for a run's result either; its refusal leaves the run as it
 * was (it used to abort it, and the result read later was empty). */
static atomic_int event_refused;

static void result_in_event(void *user_data, const pi_agent_event *event) {
    (void)user_data;
    (void)event;
    pi_agent_run *run = atomic_load(&own_run);
    if (run == NULL || atomic_load(&event_refused)) return;
    char *json = NULL;
    EXPECT_ERROR(pi_agent_run_result_json(run, &json), PI_ERROR_KIND_CALLED_FROM_CALLBACK);
    CHECK(json == NULL);
    pi_agent_event next;
    CHECK(!pi_agent_run_next(run, &next));
    atomic_store(&event_refused, 1);
}

static void test_wait_for_own_run_from_its_tool(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("c1", "own", "{}") "]},{\"content\":\"Done.\"}]", NULL);
    OK(pi_agent_add_tool(f.agent, "own", "Waits for its run", OBJECT_SCHEMA, wait_for_own_run, NULL,
                         NULL));
    uint64_t id;
    OK(pi_agent_subscribe(f.agent, result_in_event, NULL, NULL, &id));
    pi_agent_run *run = NULL;
    OK(pi_agent_run_open(f.agent, "go", &run));
    atomic_store(&own_run, run);
    /* Hang guard only: an event after the run handle was stored reaches the subscriber. */
    CHECK(wait_for(&event_refused));
    char *json = NULL;
    OK(pi_agent_run_result_json(run, &json)); /* from outside: waits, then answers */
    CHECK(atomic_load(&own_run_refused) == 1);
    CHECK(in_order(json, "refused", "Done."));
    pi_string_free(json);
    pi_agent_run_free(run);
    teardown(&f);
}

/* Freeing a run before its end aborts it and waits until the agent is idle again. */
static void test_run_free_before_end(void) {
    init_long_text();
    fixture f;
    setup_with(&f, slow_faux("{\"content\":\"Next answer.\"}"), NULL, NULL);
    pi_agent_run *run = NULL;
    OK(pi_agent_run_open_messages(
        f.agent, "{\"role\":\"user\",\"content\":\"Write a lot.\",\"timestamp\":0}", &run));
    pi_agent_event event;
    while (pi_agent_run_next(run, &event)) {
        if (event.kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE) break;
    }
    pi_agent_run_free(run);
    CHECK(!pi_agent_is_streaming(f.agent));
    CHECK(!pi_agent_is_aborted(f.agent));
    OK(pi_agent_prompt(f.agent, "Next question")); /* not ALREADY_RUNNING */
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "\"stopReason\":\"aborted\"", "Next question"));
    CHECK(in_order(json, "Next question", "Next answer."));
    pi_string_free(json);
    teardown(&f);
}

/* Freeing the agent of a run nobody reads, once the run waits for its reader: the free aborts
 * the run and returns (the run queues its last events without waiting for room), and the
 * run's reader still gets the run's end. */
static void count_event(void *user_data, const pi_agent_event *event) {
    (void)event;
    atomic_fetch_add((atomic_int *)user_data, 1);
}

static void test_free_with_an_unread_run(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    /* Thousands of text deltas, more than a run holds for its reader. */
    size_t len = 60000;
    char *script = malloc(len + 64);
    memcpy(script, "{\"content\":\"", 12);
    for (size_t i = 0; i < len; i++) script[12 + i] = (i % 5 == 4) ? ' ' : 'w';
    memcpy(script + 12 + len, "\"}", 3);
    OK(pi_faux_push_json(faux, script));
    free(script);
    fixture f;
    setup_with(&f, faux, NULL, NULL);
    static atomic_int seen;
    uint64_t id;
    OK(pi_agent_subscribe(f.agent, count_event, &seen, NULL, &id));
    pi_agent_run *run = NULL;
    OK(pi_agent_run_open(f.agent, "Write a lot.", &run));
    /* Every event reaches the subscribers before the run's reader. */
    for (int i = 0; i < 60000 && atomic_load(&seen) < 1000; i++) sleep_ms(1);
    CHECK(atomic_load(&seen) >= 1000);
    pi_agent_free(f.agent);
    pi_agent_event event;
    bool ended = false;
    while (pi_agent_run_next(run, &event)) ended = event.kind == PI_AGENT_EVENT_KIND_AGENT_END;
    CHECK(ended);
    pi_agent_run_free(run);
    pi_model_free(f.model);
    pi_faux_free(f.faux);
}

/* An abort is seen by the events that follow it and by pi_agent_is_aborted. */
typedef struct {
    pi_agent *agent;
    atomic_int aborted_seen;  /* pi_agent_is_aborted right after pi_agent_abort */
    atomic_int flagged_after; /* events delivered with `aborted` set */
} abort_listener;

static void abort_on_first_update(void *user_data, const pi_agent_event *event) {
    abort_listener *l = user_data;
    if (event->aborted) atomic_fetch_add(&l->flagged_after, 1);
    if (event->kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE && !event->aborted) {
        CHECK(!pi_agent_is_aborted(l->agent));
        pi_agent_abort(l->agent);
        /* The run waits for this callback, so it is still active. */
        if (pi_agent_is_aborted(l->agent)) atomic_store(&l->aborted_seen, 1);
    }
}

static void test_run_abort(void) {
    fixture f;
    setup_with(&f, slow_faux(NULL), NULL, NULL);
    static abort_listener listener;
    listener.agent = f.agent;
    uint64_t id;
    OK(pi_agent_subscribe(f.agent, abort_on_first_update, &listener, NULL, &id));
    pi_agent_run *run = NULL;
    OK(pi_agent_run_open(f.agent, "Write a lot.", &run));
    pi_agent_event event;
    bool end_flagged = false;
    while (pi_agent_run_next(run, &event)) {
        if (event.kind == PI_AGENT_EVENT_KIND_AGENT_END) end_flagged = event.aborted;
    }
    CHECK(end_flagged);
    CHECK(atomic_load(&listener.aborted_seen));
    CHECK(atomic_load(&listener.flagged_after) > 0);
    char *json = NULL;
    OK(pi_agent_run_result_json(run, &json));
    CHECK(strstr(json, "\"stopReason\":\"aborted\"") != NULL);
    pi_string_free(json);
    pi_agent_run_free(run);
    CHECK(!pi_agent_is_aborted(f.agent));
    pi_agent_run_abort(NULL);
    teardown(&f);
}

/* ------------------------------------------------------------ transcript and queues */

static void test_transcript_and_queues(void) {
    fixture f;
    setup(&f, "{\"content\":\"Answered.\"}", NULL);
    EXPECT_ERROR(pi_agent_append_message_json(f.agent, "{\"content\":\"no role\"}"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_agent_append_message_json(
        f.agent, "{\"role\":\"notification\",\"text\":\"build finished\",\"timestamp\":0}"));
    OK(pi_agent_append_message_json(
        f.agent, "{\"role\":\"user\",\"content\":\"Appended question\",\"timestamp\":0}"));
    OK(pi_agent_steer_text(f.agent, "steer one"));
    OK(pi_agent_steer_json(f.agent, "{\"role\":\"user\",\"content\":\"steer two\",\"timestamp\":0}"));
    OK(pi_agent_follow_up_text(f.agent, "follow one"));
    char *json = NULL;
    OK(pi_agent_steering_queue_json(f.agent, &json));
    CHECK(in_order(json, "steer one", "steer two"));
    CHECK(strstr(json, "follow one") == NULL);
    pi_string_free(json);
    OK(pi_agent_follow_up_queue_json(f.agent, &json));
    CHECK(strstr(json, "follow one") != NULL && strstr(json, "steer") == NULL);
    pi_string_free(json);
    pi_agent_clear_queues(f.agent);
    OK(pi_agent_steering_queue_json(f.agent, &json));
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);
    OK(pi_agent_continue(f.agent)); /* from the appended user message */
    json = messages_json(f.agent);
    CHECK(in_order(json, "build finished", "Appended question"));
    CHECK(in_order(json, "Appended question", "Answered."));
    pi_string_free(json);
    teardown(&f);
}

/* ------------------------------------------------------------ prompt inputs */

static void test_prompt_inputs(void) {
    fixture f;
    setup(&f, "[{\"content\":\"A picture.\"},{\"content\":\"Two messages.\"},{\"content\":\"Run.\"}]",
          NULL);
    const char *image = "[{\"type\":\"image\",\"data\":\"aGVsbG8=\",\"mimeType\":\"image/png\"}]";
    EXPECT_ERROR(pi_agent_prompt_with_images(f.agent, "x", "[{\"type\":\"image\"}]"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_agent_prompt_with_images(f.agent, "What is this?", image));
    EXPECT_ERROR(pi_agent_prompt_messages(f.agent, "[{\"content\":\"no role\"}]"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_agent_prompt_messages(
        f.agent, "[{\"role\":\"user\",\"content\":\"first part\",\"timestamp\":0},"
                 "{\"role\":\"user\",\"content\":\"second part\",\"timestamp\":0}]"));
    pi_agent_run *run = NULL;
    OK(pi_agent_run_open_with_images(f.agent, "And this?", image, &run));
    char *json = NULL;
    OK(pi_agent_run_result_json(run, &json));
    CHECK(in_order(json, "And this?", "Run."));
    pi_string_free(json);
    pi_agent_run_free(run);

    char *contexts = contexts_json(f.faux);
    CHECK(in_order(contexts, "What is this?", "\"mimeType\":\"image/png\""));
    CHECK(in_order(contexts, "first part", "second part"));
    pi_string_free(contexts);
    json = messages_json(f.agent);
    CHECK(in_order(json, "What is this?", "A picture."));
    CHECK(in_order(json, "second part", "Two messages."));
    pi_string_free(json);
    teardown(&f);
}

/* ------------------------------------------------------------ tools */

typedef struct {
    atomic_int prepared;
    atomic_int ran;
} tool_counts;

/* pi's prepareArguments: renames an old argument, refuses another. It gets the tool's
 * user_data. */
static int32_t prepare(void *user_data, pi_prepare_arguments *context) {
    atomic_fetch_add(&((tool_counts *)user_data)->prepared, 1);
    pi_str input = pi_prepare_arguments_input_json(context);
    if (str_contains(input, "\"expr\"")) {
        OK(pi_prepare_arguments_set_json(context, "{\"expression\":\"6*7\"}"));
    } else if (str_contains(input, "\"bad\"")) {
        OK(pi_prepare_arguments_set_error(context, "no bad arguments"));
    }
    EXPECT_ERROR(pi_prepare_arguments_set_json(context, "{oops"), PI_ERROR_KIND_INVALID_JSON);
    return 0;
}

static int32_t calc_tool(void *user_data, pi_tool_call *call) {
    atomic_fetch_add(&((tool_counts *)user_data)->ran, 1);
    return echo_tool(NULL, call);
}

static void test_tool_object(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("c1", "calc", "{\"expr\":\"6*7\"}") ","
                  TOOL_CALL("c2", "calc", "{\"bad\":1}") "]},{\"content\":\"ok\"}]",
          NULL);
    static tool_counts calls;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"expression\":{\"type\":"
                         "\"string\"}},\"required\":[\"expression\"]}";
    pi_tool *tool = NULL;
    EXPECT_ERROR(pi_tool_new("calc", "d", "{oops", calc_tool, &calls, count_free, &tool),
                 PI_ERROR_KIND_INVALID_JSON);
    CHECK(tool == NULL);
    OK(pi_tool_new("calc", "Calculates", schema, calc_tool, &calls, count_free, &tool));
    OK(pi_tool_set_label(tool, "Calculator"));
    OK(pi_tool_set_execution_mode(tool, "sequential"));
    EXPECT_ERROR(pi_tool_set_execution_mode(tool, "sideways"), PI_ERROR_KIND_INVALID_ARGUMENT);
    OK(pi_tool_set_prepare_arguments(tool, prepare));
    OK(pi_agent_add_tool_object(f.agent, tool));

    /* A tool freed unused, or handed to a NULL agent, frees its user_data at once. */
    int before = atomic_load(&freed);
    OK(pi_tool_new("unused", "d", OBJECT_SCHEMA, calc_tool, &calls, count_free, &tool));
    pi_tool_free(tool);
    OK(pi_tool_new("orphan", "d", OBJECT_SCHEMA, calc_tool, &calls, count_free, &tool));
    EXPECT_ERROR(pi_agent_add_tool_object(NULL, tool), PI_ERROR_KIND_NULL_ARGUMENT);
    CHECK(atomic_load(&freed) == before + 2);

    char *json = NULL;
    OK(pi_agent_tool_label(f.agent, "calc", &json));
    CHECK(strcmp(json, "Calculator") == 0);
    pi_string_free(json);
    pi_str mode;
    OK(pi_agent_tool_execution_mode(f.agent, "calc", &mode));
    CHECK(str_eq(mode, "sequential"));
    EXPECT_ERROR(pi_agent_tool_label(f.agent, "nope", &json), PI_ERROR_KIND_NOT_FOUND);
    OK(pi_agent_add_tool(f.agent, "plain", "Plain", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    OK(pi_agent_tool_label(f.agent, "plain", &json));
    CHECK(strcmp(json, "plain") == 0); /* the name unless a label was set */
    pi_string_free(json);
    OK(pi_agent_tool_execution_mode(f.agent, "plain", &mode));
    CHECK(mode.len == 0);
    OK(pi_agent_tools_json(f.agent, &json));
    CHECK(in_order(json, "\"name\":\"calc\"", "\"name\":\"plain\""));
    CHECK(strstr(json, "\"required\":[\"expression\"]") != NULL);
    pi_string_free(json);

    OK(pi_agent_prompt(f.agent, "Compute"));
    CHECK(atomic_load(&calls.prepared) == 2);
    json = messages_json(f.agent);
    CHECK(strstr(json, "echo:{\\\"expression\\\":\\\"6*7\\\"}") != NULL);
    CHECK(in_order(json, "\"toolCallId\":\"c2\"", "no bad arguments"));
    pi_string_free(json);
    CHECK(atomic_load(&calls.ran) == 1); /* c2 never ran */
    int registered = atomic_load(&freed);
    teardown(&f);
    CHECK(atomic_load(&freed) == registered + 1);
}

/* ------------------------------------------------------------ getters and settings */

typedef struct {
    atomic_int calls;
    char options[2048];
} options_spy;

/* A faux factory that records the options of the request. */
static int32_t spy_factory(void *user_data, pi_faux_request *request) {
    options_spy *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    pi_str options = pi_faux_request_options_json(request);
    snprintf(s->options, sizeof s->options, "%.*s", (int)options.len, options.data);
    OK(pi_faux_request_set_message_json(request, "{\"content\":\"seen\"}"));
    return 0;
}

static void test_getters_and_settings(void) {
    fixture f;
    setup(&f, NULL, "{\"streamOptions\":{\"apiKey\":\"initial-secret\"}}");
    OK(pi_agent_set_system_prompt(f.agent, "Be terse."));
    char *text = NULL;
    OK(pi_agent_system_prompt(f.agent, &text));
    CHECK(strcmp(text, "Be terse.") == 0);
    pi_string_free(text);
    pi_model *model = NULL;
    OK(pi_agent_model(f.agent, &model));
    CHECK(str_eq(pi_model_id(model), "faux-1"));
    CHECK(pi_models_are_equal(model, f.model));
    pi_model_free(model);
    CHECK(str_eq(pi_agent_thinking_level(f.agent), "off")); /* pi's default, "off" included */
    OK(pi_agent_set_thinking_level(f.agent, "high"));
    CHECK(str_eq(pi_agent_thinking_level(f.agent), "high"));
    CHECK(pi_agent_thinking_level(NULL).len == 0);

    /* Request options after construction. */
    OK(pi_agent_set_session_id(f.agent, "sess-9"));
    OK(pi_agent_set_header(f.agent, "x-trace", "t1"));
    OK(pi_agent_set_header(f.agent, "Authorization", "Bearer header-secret"));
    OK(pi_agent_set_header(f.agent, "x-gone", "g"));
    OK(pi_agent_set_header(f.agent, "x-gone", NULL));
    OK(pi_agent_set_api_key(f.agent, "changed-secret"));
    OK(pi_agent_set_tool_timeout_ms(f.agent, 60000));
    OK(pi_agent_set_stream_idle_timeout_ms(f.agent, 60000));
    char *json = NULL;
    OK(pi_agent_settings_json(f.agent, &json));
    CHECK(strstr(json, "\"thinkingLevel\":\"high\"") != NULL);
    CHECK(strstr(json, "\"sessionId\":\"sess-9\"") != NULL);
    CHECK(strstr(json, "\"toolTimeoutMs\":60000") != NULL);
    CHECK(strstr(json, "\"streamIdleTimeoutMs\":60000") != NULL);
    CHECK(strstr(json, "\"x-trace\":\"t1\"") != NULL);
    CHECK(strstr(json, "secret") == NULL); /* secrets are never written, headers included */
    CHECK(strstr(json, "Authorization") == NULL);
    pi_string_free(json);

    static options_spy spy;
    OK(pi_faux_push_factory(f.faux, spy_factory, &spy, NULL));
    OK(pi_agent_prompt(f.agent, "hi"));
    CHECK(atomic_load(&spy.calls) == 1);
    CHECK(strstr(spy.options, "\"sessionId\":\"sess-9\"") != NULL);
    CHECK(strstr(spy.options, "\"x-trace\":\"t1\"") != NULL);
    CHECK(strstr(spy.options, "x-gone") == NULL);
    CHECK(strstr(spy.options, "secret") == NULL);

    /* Replacing all request options; watchdogs off again. */
    EXPECT_ERROR(pi_agent_set_stream_options_json(f.agent, "{\"maxToken\":5}"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_agent_set_stream_options_json(f.agent, "{\"maxTokens\":5}"));
    OK(pi_agent_set_tool_timeout_ms(f.agent, 0));
    OK(pi_agent_settings_json(f.agent, &json));
    CHECK(strstr(json, "\"maxTokens\":5") != NULL);
    CHECK(strstr(json, "sessionId") == NULL);
    CHECK(strstr(json, "toolTimeoutMs") == NULL);
    pi_string_free(json);
    OK(pi_faux_push_factory(f.faux, spy_factory, &spy, NULL));
    OK(pi_agent_prompt(f.agent, "again"));
    CHECK(strstr(spy.options, "\"maxTokens\":5") != NULL);
    CHECK(strstr(spy.options, "x-trace") == NULL);
    teardown(&f);
}

/* Waits until the run no longer waits for it (pi_tool_call_is_aborted). */
static int32_t until_stopped_tool(void *user_data, pi_tool_call *call) {
    for (int i = 0; i < 60000 && !pi_tool_call_is_aborted(call); i++) sleep_ms(1);
    CHECK(pi_tool_call_is_aborted(call));
    atomic_store((atomic_int *)user_data, 1);
    return 0;
}

/* The tool watchdog: a tool that blocks gets an error result after toolTimeoutMs, and sees it
 * through pi_tool_call_is_aborted; the stream watchdog: a model that goes quiet ends the turn.
 * Only the watchdogs can end these runs. */
static void test_watchdogs(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("w1", "block", "{}") "]},{\"content\":\"after\"}]",
          NULL);
    static atomic_int stopped;
    OK(pi_agent_add_tool(f.agent, "block", "Blocks", OBJECT_SCHEMA, until_stopped_tool, &stopped,
                         NULL));
    OK(pi_agent_set_tool_timeout_ms(f.agent, 200));
    OK(pi_agent_prompt(f.agent, "Run it"));
    char *json = messages_json(f.agent);
    CHECK(strstr(json, "Tool block timed out after 200 ms") != NULL);
    CHECK(strstr(json, "after") != NULL);
    pi_string_free(json);
    CHECK(wait_for(&stopped));
    CHECK(!pi_agent_is_aborted(f.agent)); /* the run itself was not aborted */
    teardown(&f);

    init_long_text();
    setup_with(&f, slow_faux(NULL), NULL, "{\"streamIdleTimeoutMs\":300}");
    OK(pi_agent_prompt(f.agent, "Write a lot."));
    char *error = pi_agent_error_message(f.agent);
    CHECK(error != NULL && strstr(error, "ms without data") != NULL);
    pi_string_free(error);
    teardown(&f);
}

/* ------------------------------------------------------------ subscriptions */

typedef struct {
    atomic_int updates;
    atomic_int with_message;
} partial_counts;

static void count_partial(void *user_data, const pi_agent_event *event) {
    partial_counts *c = user_data;
    if (event->kind != PI_AGENT_EVENT_KIND_MESSAGE_UPDATE) return;
    atomic_fetch_add(&c->updates, 1);
    if (str_contains(event->json, "\"message\":{\"role\":\"assistant\"")) {
        atomic_fetch_add(&c->with_message, 1);
    }
    CHECK(str_contains(event->json, "\"assistantMessageEvent\":{"));
}

static void test_subscribe_with_partial(void) {
    fixture f;
    setup(&f, "{\"content\":\"A streamed answer in several deltas.\"}", NULL);
    static partial_counts plain, partial;
    uint64_t a, b;
    OK(pi_agent_subscribe(f.agent, count_partial, &plain, NULL, &a));
    OK(pi_agent_subscribe_with_partial(f.agent, count_partial, &partial, NULL, &b));
    EXPECT_ERROR(pi_agent_subscribe_with_partial(f.agent, NULL, NULL, NULL, &b),
                 PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_agent_prompt(f.agent, "hi"));
    CHECK(atomic_load(&plain.updates) > 1);
    CHECK(atomic_load(&plain.with_message) == 0); /* delta only by default */
    CHECK(atomic_load(&partial.updates) == atomic_load(&plain.updates));
    CHECK(atomic_load(&partial.with_message) == atomic_load(&partial.updates));
    teardown(&f);
}

/* ------------------------------------------------------------ model hooks */

typedef struct {
    atomic_int calls;
    int fail_with;
    atomic_int saw_custom;
} convert_state;

static int32_t convert(void *user_data, pi_convert_to_llm *context) {
    convert_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    if (s->fail_with != 0) return s->fail_with;
    pi_str messages = pi_convert_to_llm_messages_json(context);
    if (str_contains(messages, "\"role\":\"notification\"")) atomic_store(&s->saw_custom, 1);
    EXPECT_ERROR(pi_convert_to_llm_set_messages_json(context, "[{\"role\":\"notification\"}]"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_convert_to_llm_set_messages_json(
        context, "[{\"role\":\"user\",\"content\":\"converted: build finished\",\"timestamp\":0}]"));
    return 0;
}

static void test_convert_to_llm(void) {
    fixture f;
    setup(&f, "{\"content\":\"noted\"}", NULL);
    OK(pi_agent_set_messages_json(
        f.agent, "[{\"role\":\"notification\",\"text\":\"build finished\",\"timestamp\":0}]"));
    static convert_state state;
    OK(pi_agent_set_convert_to_llm(f.agent, convert, &state, count_free));
    OK(pi_agent_prompt(f.agent, "Anything new?"));
    CHECK(atomic_load(&state.calls) == 1 && atomic_load(&state.saw_custom));
    char *contexts = contexts_json(f.faux);
    CHECK(strstr(contexts, "converted: build finished") != NULL);
    CHECK(strstr(contexts, "notification") == NULL);
    pi_string_free(contexts);

    state.fail_with = 3;
    OK(pi_agent_prompt(f.agent, "Again?"));
    char *error = pi_agent_error_message(f.agent);
    CHECK(error != NULL && strcmp(error, "convert_to_llm hook returned error code 3") == 0);
    pi_string_free(error);
    CHECK(pi_faux_call_count(f.faux) == 1); /* the failed turn called no model */

    int before = atomic_load(&freed);
    OK(pi_agent_set_convert_to_llm(f.agent, NULL, NULL, NULL)); /* removed: pi's default */
    CHECK(atomic_load(&freed) == before + 1);
    teardown(&f);
}

static int32_t key_hook(void *user_data, pi_get_api_key *context) {
    atomic_fetch_add((atomic_int *)user_data, 1);
    CHECK(str_eq(pi_get_api_key_provider(context), "faux"));
    EXPECT_ERROR(pi_get_api_key_set_api_key(context, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_get_api_key_set_api_key(context, "short-lived"));
    return 0;
}

static int32_t failing_key_hook(void *user_data, pi_get_api_key *context) {
    (void)user_data;
    (void)context;
    return 9;
}

static void test_get_api_key(void) {
    fixture f;
    setup(&f, "{\"content\":\"keyed\"}", NULL);
    static atomic_int calls;
    OK(pi_agent_set_get_api_key(f.agent, key_hook, &calls, NULL));
    OK(pi_agent_prompt(f.agent, "hi"));
    CHECK(atomic_load(&calls) == 1);
    OK(pi_agent_set_get_api_key(f.agent, failing_key_hook, NULL, NULL));
    OK(pi_agent_prompt(f.agent, "again"));
    char *error = pi_agent_error_message(f.agent);
    CHECK(error != NULL && strcmp(error, "get_api_key hook returned error code 9") == 0);
    pi_string_free(error);
    teardown(&f);
}

/* A stream function that routes every call to another model. */
typedef struct {
    pi_model *target;
    int mode; /* 0: open on target, 1: open nothing, 2: return 5, 3: open from a thread */
    atomic_int calls;
    atomic_int saw_prompt;
    atomic_int saw_secret;
    atomic_int saw_reasoning;
} route_state;

typedef struct {
    pi_stream_fn_call *call;
    pi_model *target;
    pi_error *error;
} open_job;

static void *open_on_thread(void *arg) {
    open_job *job = arg;
    job->error = pi_stream_fn_call_open(job->call, job->target, NULL, NULL);
    return NULL;
}

static int32_t route(void *user_data, pi_stream_fn_call *call) {
    route_state *s = user_data;
    if (s->mode == 3) {
        /* Documented as callable from any thread while the callback runs. */
        open_job job = {call, s->target, NULL};
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, open_on_thread, &job) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
        OK(job.error);
        return 0;
    }
    atomic_fetch_add(&s->calls, 1);
    CHECK(str_eq(pi_model_id(pi_stream_fn_call_model(call)), "faux-1"));
    if (str_contains(pi_stream_fn_call_context_json(call), "Route me")) {
        atomic_store(&s->saw_prompt, 1);
    }
    pi_str options = pi_stream_fn_call_options_json(call);
    if (str_contains(options, "route-secret")) atomic_store(&s->saw_secret, 1);
    if (str_contains(options, "\"reasoning\":\"low\"")) atomic_store(&s->saw_reasoning, 1);
    if (s->mode == 1) return 0;
    if (s->mode == 2) return 5;
    EXPECT_ERROR(pi_stream_fn_call_open(call, NULL, "{\"messages\":42}", NULL),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_stream_fn_call_open(call, s->target, NULL, NULL));
    return 0;
}

static pi_agent *abort_target;
static void abort_on_update(void *user_data, const pi_agent_event *event) {
    (void)user_data;
    if (event->kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE) pi_agent_abort(abort_target);
}

static void test_stream_fn(void) {
    init_long_text();
    fixture f;
    setup(&f, NULL,
          "{\"thinkingLevel\":\"low\",\"streamOptions\":{\"apiKey\":\"route-secret\","
          "\"headers\":{\"x-api-key\":\"route-secret-header\"}}}");
    pi_faux *other = NULL;
    OK(pi_faux_new_with_options("{\"provider\":\"other\",\"models\":[\"other-1\"]}", &other));
    OK(pi_faux_push_json(other, "{\"content\":\"From the other model.\"}"));
    static route_state state;
    OK(pi_faux_model(other, &state.target));
    OK(pi_agent_set_stream_fn(f.agent, route, &state, NULL));
    OK(pi_agent_prompt(f.agent, "Route me"));
    CHECK(atomic_load(&state.calls) == 1);
    CHECK(atomic_load(&state.saw_prompt) && atomic_load(&state.saw_reasoning));
    CHECK(!atomic_load(&state.saw_secret)); /* secrets are not in the options JSON */
    CHECK(pi_faux_call_count(other) == 1 && pi_faux_call_count(f.faux) == 0);
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "From the other model.", "\"provider\":\"other\""));
    pi_string_free(json);

    state.mode = 1;
    OK(pi_agent_prompt(f.agent, "nothing"));
    char *error = pi_agent_error_message(f.agent);
    CHECK(error != NULL && strcmp(error, "stream_fn callback opened no stream") == 0);
    pi_string_free(error);
    state.mode = 2;
    OK(pi_agent_prompt(f.agent, "failing"));
    error = pi_agent_error_message(f.agent);
    CHECK(error != NULL && strcmp(error, "stream_fn callback returned error code 5") == 0);
    pi_string_free(error);
    state.mode = 3;
    OK(pi_faux_push_json(other, "{\"content\":\"Opened on a thread.\"}"));
    OK(pi_agent_prompt(f.agent, "threaded"));
    json = messages_json(f.agent);
    CHECK(in_order(json, "threaded", "Opened on a thread."));
    pi_string_free(json);

    /* The run's abort reaches the stream the callback opened (else this streams for minutes). */
    pi_model_free(state.target);
    pi_faux_free(other);
    other = slow_faux(NULL);
    OK(pi_faux_model(other, &state.target));
    state.mode = 0;
    abort_target = f.agent;
    uint64_t id;
    OK(pi_agent_subscribe(f.agent, abort_on_update, NULL, NULL, &id));
    OK(pi_agent_prompt(f.agent, "Write a lot."));
    json = messages_json(f.agent);
    CHECK(in_order(json, "Write a lot.", "\"stopReason\":\"aborted\""));
    pi_string_free(json);
    teardown(&f);
    pi_model_free(state.target);
    pi_faux_free(other);
}

/* ------------------------------------------------------------ hook contexts and results */

static int32_t block_by_json(void *user_data, pi_before_tool_call *context) {
    (void)user_data;
    pi_str json = pi_before_tool_call_context_json(context);
    CHECK(str_contains(json, "\"assistantMessage\":{"));
    CHECK(str_contains(json, "\"toolCall\":{\"type\":\"toolCall\",\"id\":\"b")); /* b1, b2 */
    CHECK(str_contains(json, "\"args\":{\"x\":1}"));
    EXPECT_ERROR(pi_before_tool_call_set_result_json(context, "{\"blok\":true}"),
                 PI_ERROR_KIND_INVALID_JSON);
    if (str_eq(pi_before_tool_call_id(context), "b1")) {
        OK(pi_before_tool_call_set_result_json(context, "{\"block\":true,\"reason\":\"nope\"}"));
    }
    return 0;
}

static int32_t replace_by_json(void *user_data, pi_after_tool_call *context) {
    (void)user_data;
    pi_str json = pi_after_tool_call_context_json(context);
    CHECK(str_contains(json, "\"isError\":false"));
    CHECK(str_contains(json, "\"result\":{\"content\":["));
    OK(pi_after_tool_call_set_result_json(
        context, "{\"content\":[{\"type\":\"text\",\"text\":\"replaced\"}],\"details\":null}"));
    return 0;
}

static void stop_by_json(void *user_data, const pi_should_stop_after_turn *context, bool *stop) {
    (void)user_data;
    CHECK(str_contains(pi_should_stop_after_turn_context_json(context), "\"newMessages\":["));
    *stop = false;
}

static void test_hook_json(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("b1", "echo", "{\"x\":1}") "," TOOL_CALL("b2", "echo",
              "{\"x\":1}") "]},{\"content\":\"ok\"}]",
          NULL);
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    OK(pi_agent_set_before_tool_call(f.agent, block_by_json, NULL, NULL));
    OK(pi_agent_set_after_tool_call(f.agent, replace_by_json, NULL, NULL));
    OK(pi_agent_set_should_stop_after_turn(f.agent, stop_by_json, NULL, NULL));
    OK(pi_agent_prompt(f.agent, "go"));
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "\"toolCallId\":\"b1\"", "nope"));
    CHECK(in_order(json, "\"toolCallId\":\"b2\"", "replaced"));
    CHECK(strstr(json, "echo:") == NULL);
    pi_string_free(json);
    teardown(&f);
}

/* A C before_tool_call that blocks does not keep an abort from ending the run; it sees the
 * abort while it still blocks. */
static atomic_int hook_saw_abort;
static int32_t blocking_before(void *user_data, pi_before_tool_call *context) {
    gate *g = user_data;
    atomic_store(&g->entered, 1);
    for (int i = 0; i < 60000 && !atomic_load(&g->released); i++) {
        if (pi_before_tool_call_is_aborted(context)) atomic_store(&hook_saw_abort, 1);
        sleep_ms(1);
    }
    CHECK(atomic_load(&g->released));
    return 0;
}

static void *abort_when_entered(void *arg) {
    gate *g = arg;
    CHECK(wait_for(&g->entered));
    pi_agent_abort(g->agent);
    return NULL;
}

static void test_blocking_hook_abort(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("h1", "echo", "{}") "]},{\"content\":\"never\"}]",
          NULL);
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    static gate g;
    g.agent = f.agent;
    OK(pi_agent_set_before_tool_call(f.agent, blocking_before, &g, count_free));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, abort_when_entered, &g) == 0);
    OK(pi_agent_prompt(f.agent, "go")); /* returns although the hook still blocks */
    pthread_join(thread, NULL);
    CHECK(!atomic_load(&g.released));
    CHECK(wait_for(&hook_saw_abort));
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "\"toolCallId\":\"h1\"", "Tool execution was aborted"));
    CHECK(strstr(json, "never") == NULL);
    pi_string_free(json);
    atomic_store(&g.released, 1);
    int before = atomic_load(&freed);
    teardown(&f); /* waits for the hook to return, then frees its user_data */
    CHECK(atomic_load(&freed) == before + 1);
}

/* ------------------------------------------------------------ pi_agent_free from callbacks */

/* Where the agent is freed from. */
enum { FREE_IN_EVENT, FREE_IN_TOOL, FREE_IN_HOOK, FREE_IN_RUN_EVENT };

typedef struct {
    pi_agent *agent;
    atomic_int done;
} freeing;

static void free_once(freeing *state) {
    if (atomic_exchange(&state->done, 1) == 0) pi_agent_free(state->agent);
}

static void free_in_event(void *user_data, const pi_agent_event *event) {
    if (event->kind == PI_AGENT_EVENT_KIND_TOOL_EXECUTION_START) free_once(user_data);
}

static int32_t free_in_tool(void *user_data, pi_tool_call *call) {
    free_once(user_data);
    OK(pi_tool_call_set_text(call, "freed"));
    return 0;
}

static int32_t free_in_hook(void *user_data, pi_before_tool_call *context) {
    (void)context;
    free_once(user_data);
    return 0;
}

static void test_free_from_callback(int where) {
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "[{\"content\":[" TOOL_CALL("f1", "tool", "{}") "]},"
                               "{\"content\":\"after\"}]"));
    OK(pi_faux_model(faux, &model));
    static freeing state;
    atomic_store(&state.done, 0);
    OK(pi_agent_new(model, "", NULL, &state.agent));
    int before = atomic_load(&freed);
    if (where == FREE_IN_TOOL) {
        OK(pi_agent_add_tool(state.agent, "tool", "Frees", OBJECT_SCHEMA, free_in_tool, &state,
                             count_free));
    } else {
        OK(pi_agent_add_tool(state.agent, "tool", "Echoes", OBJECT_SCHEMA, echo_tool, NULL,
                             count_free));
    }
    if (where == FREE_IN_HOOK) {
        OK(pi_agent_set_before_tool_call(state.agent, free_in_hook, &state, count_free));
    }
    uint64_t id;
    if (where == FREE_IN_EVENT || where == FREE_IN_RUN_EVENT) {
        OK(pi_agent_subscribe(state.agent, free_in_event, &state, count_free, &id));
    }
    if (where == FREE_IN_RUN_EVENT) {
        /* The run handle keeps the agent alive; its events go on to agent_end. */
        pi_agent_run *run = NULL;
        OK(pi_agent_run_open(state.agent, "go", &run));
        pi_agent_event event;
        bool ended = false;
        while (pi_agent_run_next(run, &event)) ended = event.kind == PI_AGENT_EVENT_KIND_AGENT_END;
        CHECK(ended);
        pi_agent_run_free(run);
    } else {
        /* The agent is freed under this call; it returns, and the handle is not used again. */
        OK(pi_agent_prompt(state.agent, "go"));
    }
    CHECK(atomic_load(&state.done));
    int registrations = where == FREE_IN_TOOL ? 1 : (where == FREE_IN_HOOK ? 2 : 2);
    CHECK(wait_equals(&freed, before + registrations));
    pi_model_free(model);
    pi_faux_free(faux);
}

int main(void) {
    test_run_pull();
    test_run_free_before_end();
    test_wait_for_own_run_from_its_tool();
    test_run_abort();
    test_free_with_an_unread_run();
    test_transcript_and_queues();
    test_prompt_inputs();
    test_tool_object();
    test_getters_and_settings();
    test_watchdogs();
    test_subscribe_with_partial();
    test_convert_to_llm();
    test_get_api_key();
    test_stream_fn();
    test_hook_json();
    test_blocking_hook_abort();
    test_free_from_callback(FREE_IN_EVENT);
    test_free_from_callback(FREE_IN_TOOL);
    test_free_from_callback(FREE_IN_HOOK);
    test_free_from_callback(FREE_IN_RUN_EVENT);
    printf("ffi_agent_run_test: ok\n");
    return 0;
}
