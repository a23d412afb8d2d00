/*
 * Durable sessions through the C API (pi_session_*), driven by ffi/tests/c_session.rs against
 * the mock server:
 *   ffi_session_test start  <db> <url>           prompt "r1", print every record as
 *                                                "RECORD <json>" until killed
 *   ffi_session_test resume <db> <url> <cursor>  reopen, repeat the request (a no-op), wait
 *                                                until idle, print the records after <cursor>
 *                                                and "TRANSCRIPT <json>"
 *   ffi_session_test free_in_tool <db> <url>     prompt "r1"; the `wait` tool frees the
 *                                                session from inside its own callback
 *   ffi_session_test delete <db> <url>           prompt "r1" (answered without tools), then
 *                                                list and delete the session
 * The `wait` tool prints "TOOL_STARTED" and sleeps (the harness kills the process there).
 */
#include "test_support.h"

#include <stdatomic.h>

static int32_t wait_tool(void *user_data, pi_tool_call *call) {
    (void)user_data;
    printf("TOOL_STARTED\n");
    fflush(stdout);
    for (int i = 0; i < 600 && !pi_tool_call_is_aborted(call); i++) {
        struct timespec pause = {0, 100000000};
        nanosleep(&pause, NULL);
    }
    OK(pi_tool_call_set_text(call, "waited"));
    return 0;
}

static pi_session *freed_session;
static atomic_int freed_inside;

/* Frees its own session: the free cannot wait for this callback, so it must not. Waiting for
 * the session from here is refused first (it would wait for itself: it used to hang). */
static int32_t free_tool(void *user_data, pi_tool_call *call) {
    (void)user_data;
    EXPECT_ERROR(pi_session_wait_idle(freed_session), PI_ERROR_KIND_CALLED_FROM_CALLBACK);
    char *compaction = NULL;
    EXPECT_ERROR(pi_session_compact(freed_session, &compaction), PI_ERROR_KIND_CALLED_FROM_CALLBACK);
    CHECK(compaction == NULL);
    pi_session_free(freed_session);
    atomic_store(&freed_inside, 1);
    OK(pi_tool_call_set_text(call, "freed"));
    return 0;
}

static pi_tool_callback tool_callback = wait_tool;

static pi_error *try_open_session(const char *db, const char *url, pi_session **out);

static pi_session *open_session(const char *db, const char *url) {
    pi_session *session = NULL;
    OK(try_open_session(db, url, &session));
    return session;
}

static pi_error *try_open_session(const char *db, const char *url, pi_session **out) {
    char model_json[512];
    snprintf(model_json, sizeof model_json,
             "{\"id\":\"mock-model\",\"api\":\"openai-completions\",\"provider\":\"mock\","
             "\"baseUrl\":\"%s\"}",
             url);
    pi_model *model = NULL;
    OK(pi_model_from_json(model_json, &model));
    pi_tool *tool = NULL;
    OK(pi_tool_new("wait", "Waits", "{\"type\":\"object\"}", tool_callback, NULL, NULL, &tool));
    OK(pi_tool_set_replay_safe(tool, false));
    pi_error *err = pi_session_open(db, "c-session", model, "Be brief.",
                                    "{\"streamOptions\":{\"apiKey\":\"test-key\"}}", NULL,
                                    &tool, 1, out);
    pi_model_free(model);
    return err;
}

static void start(const char *db, const char *url) {
    pi_session *session = open_session(db, url);
    pi_session_subscription *records = NULL;
    OK(pi_session_subscribe(session, 0, &records));
    char *receipt = NULL;
    OK(pi_session_prompt(session, "r1", "hello", &receipt));
    CHECK(strstr(receipt, "\"requestId\":\"r1\"") != NULL);
    pi_string_free(receipt);
    for (;;) {
        char *record = NULL;
        OK(pi_session_subscription_next(records, 30000, &record));
        if (record == NULL) {
            continue;
        }
        printf("RECORD %s\n", record);
        fflush(stdout);
        pi_string_free(record);
    }
}

static void resume(const char *db, const char *url, unsigned long long cursor) {
    pi_session *session = open_session(db, url);
    /* A second handle is refused while this one has the session open. */
    pi_session *second = NULL;
    pi_error *busy = try_open_session(db, url, &second);
    CHECK(busy != NULL && pi_error_get_kind(busy) == PI_ERROR_KIND_SESSION_IN_USE);
    CHECK(str_contains(pi_error_message(busy), "is open in another handle"));
    pi_error_free(busy);
    CHECK(second == NULL);
    /* Following a database that is not there is an error, not a new empty file followed for
     * ever. */
    pi_session_subscription *nowhere = NULL;
    EXPECT_ERROR(pi_session_follow("/nonexistent-pi-dir/typo.db", "c-session", 0, &nowhere),
                 PI_ERROR_KIND_SESSION);
    CHECK(nowhere == NULL);
    char *receipt = NULL;
    OK(pi_session_prompt(session, "r1", "hello", &receipt));
    CHECK(strstr(receipt, "\"seq\":0") != NULL); /* the first receipt, not a new request */
    pi_string_free(receipt);
    EXPECT_ERROR(pi_session_steer(session, "r1", "x", NULL), PI_ERROR_KIND_SESSION);
    EXPECT_ERROR(pi_session_prompt(session, "", "x", NULL), PI_ERROR_KIND_INVALID_ARGUMENT);
    OK(pi_session_wait_idle(session));
    pi_session_subscription *records = NULL;
    OK(pi_session_subscribe(session, cursor, &records));
    uint64_t last = pi_session_last_seq(session);
    while (pi_session_subscription_cursor(records) < last) {
        char *record = NULL;
        OK(pi_session_subscription_next(records, 30000, &record));
        CHECK(record != NULL);
        printf("RECORD %s\n", record);
        pi_string_free(record);
    }
    pi_session_subscription_free(records);
    char *transcript = NULL;
    OK(pi_session_transcript_json(session, &transcript));
    printf("TRANSCRIPT %s\n", transcript);
    pi_string_free(transcript);
    pi_session_free(session);
    printf("ffi_session_test resume: ok\n");
}

static void free_in_tool(const char *db, const char *url) {
    tool_callback = free_tool;
    freed_session = open_session(db, url);
    char *receipt = NULL;
    OK(pi_session_prompt(freed_session, "r1", "hello", &receipt));
    pi_string_free(receipt);
    for (int i = 0; i < 60000 && !atomic_load(&freed_inside); i++) sleep_ms(1);
    CHECK(atomic_load(&freed_inside));
    sleep_ms(200); /* the session's work ends on its own; nothing may crash meanwhile */
    printf("ffi_session_test free_in_tool: ok\n");
}

static void expect_ids(const char *db, const char *expected) {
    char *ids = NULL;
    OK(pi_session_list_json(db, &ids));
    if (strcmp(ids, expected) != 0) {
        fprintf(stderr, "session ids %s, expected %s\n", ids, expected);
        exit(1);
    }
    pi_string_free(ids);
}

static void delete_session(const char *db, const char *url) {
    pi_session *session = open_session(db, url);
    char *receipt = NULL;
    OK(pi_session_prompt(session, "r1", "hello", &receipt));
    pi_string_free(receipt);
    OK(pi_session_wait_idle(session));
    expect_ids(db, "[\"c-session\"]");
    /* Refused while a handle has the session open. */
    bool deleted = true;
    EXPECT_ERROR(pi_session_delete(db, "c-session", &deleted), PI_ERROR_KIND_SESSION_IN_USE);
    expect_ids(db, "[\"c-session\"]");
    pi_session_free(session);
    OK(pi_session_delete(db, "c-session", &deleted));
    CHECK(deleted);
    expect_ids(db, "[]");
    OK(pi_session_delete(db, "c-session", &deleted));
    CHECK(!deleted);
    EXPECT_ERROR(pi_session_delete(db, "", &deleted), PI_ERROR_KIND_INVALID_ARGUMENT);
    EXPECT_ERROR(pi_session_delete(db, "c-session", NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    char *ids = NULL;
    EXPECT_ERROR(pi_session_list_json("/nonexistent-pi-dir/typo.db", &ids), PI_ERROR_KIND_SESSION);
    CHECK(ids == NULL);
    /* The id opens as a new, empty session. */
    session = open_session(db, url);
    char *transcript = NULL;
    OK(pi_session_transcript_json(session, &transcript));
    CHECK(strcmp(transcript, "[]") == 0);
    pi_string_free(transcript);
    CHECK(pi_session_last_seq(session) == 0);
    pi_session_free(session);
    printf("ffi_session_test delete: ok\n");
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "start") == 0) {
        start(argv[2], argv[3]);
        return 0;
    }
    if (argc >= 5 && strcmp(argv[1], "resume") == 0) {
        resume(argv[2], argv[3], strtoull(argv[4], NULL, 10));
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "free_in_tool") == 0) {
        free_in_tool(argv[2], argv[3]);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "delete") == 0) {
        delete_session(argv[2], argv[3]);
        return 0;
    }
    fprintf(stderr,
            "usage: ffi_session_test start|resume|free_in_tool|delete <db> <url> [cursor]\n");
    return 2;
}
