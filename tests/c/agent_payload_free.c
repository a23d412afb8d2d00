/*
 * An agent freed from its own `on_payload` callback: `agent_payload_free MODEL_JSON` sets
 * stream options whose `on_payload` calls `pi_agent_free` on the agent, prompts it, and exits 0
 * once the prompt has returned. The callback runs as one of the agent's own, so the free is
 * deferred (it cannot wait for the run that waits for the callback) instead of blocking, and
 * the `free_user_data` of the callback still runs exactly once.
 */
#include "test_support.h"

#include <stdatomic.h>
#include <stdio.h>

static pi_agent *agent;
static atomic_int frees_in_payload;
static atomic_int user_data_freed;

static void free_agent(void *user_data, pi_on_payload *payload) {
    (void)user_data;
    (void)payload;
    if (atomic_fetch_add(&frees_in_payload, 1) == 0) pi_agent_free(agent);
}

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&user_data_freed, 1);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL_JSON\n", argv[0]);
        return 2;
    }
    pi_model *model = NULL;
    OK(pi_model_from_json(argv[1], &model));
    OK(pi_agent_new(model, "", "{\"streamOptions\":{\"apiKey\":\"k\"}}", &agent));
    pi_stream_options *options = NULL;
    OK(pi_stream_options_from_json("{\"apiKey\":\"k\"}", &options));
    OK(pi_stream_options_set_on_payload(options, free_agent, NULL, count_free));
    OK(pi_agent_set_stream_options(agent, options));
    pi_stream_options_free(options);
    /* The run ends aborted by the free; the handle is gone once the call returns. */
    pi_error *error = pi_agent_prompt(agent, "hello");
    pi_error_free(error);
    CHECK(atomic_load(&frees_in_payload) == 1);
    /* The agent itself goes when its run has ended, and the callback's user data with it. */
    for (int i = 0; i < 60000 && atomic_load(&user_data_freed) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&user_data_freed) == 1);
    pi_model_free(model);
    printf("agent_payload_free: ok\n");
    return 0;
}
