/*
 * Peak memory of an agent run whose tool returns one big text result (issue 17): a faux model
 * calls the tool `big`, the tool answers MEGABYTES MiB of text with `pi_tool_call_set_text`,
 * the model answers "done", and the program reads the transcript once
 * (`pi_agent_messages_json`), as an application saving it would.
 *
 *   big_result_bench [MEGABYTES]   default 200
 *
 * Prints `big result N MiB: peak RSS P MiB (R x the result)`, P being this whole process's
 * peak resident set (getrusage). No timing; run by ffi/tests/c_programs-style tests with a
 * small size, and by hand (release library) for the README figure.
 */
#include "pi_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long megabytes = 200;

#define OK(call)                                                                        \
    do {                                                                                \
        pi_error *err_ = (call);                                                        \
        if (err_ != NULL) {                                                             \
            pi_str m_ = pi_error_message(err_);                                         \
            fprintf(stderr, "%s failed: %.*s\n", #call, (int)m_.len, m_.data);          \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static int32_t big_tool(void *user_data, pi_tool_call *call) {
    (void)user_data;
    size_t size = (size_t)megabytes << 20;
    char *text = malloc(size + 1);
    if (text == NULL) return 1;
    for (size_t i = 0; i < size; i++) text[i] = (char)('a' + i % 26);
    text[size] = '\0';
    pi_error *err = pi_tool_call_set_text(call, text);
    free(text);
    if (err != NULL) {
        pi_error_free(err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1) megabytes = strtol(argv[1], NULL, 10);
    if (megabytes <= 0) {
        fprintf(stderr, "usage: %s [MEGABYTES]\n", argv[0]);
        return 2;
    }
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "{\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\","
                               "\"name\":\"big\",\"arguments\":{}}]}"));
    OK(pi_faux_push_json(faux, "\"done\""));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_agent_add_tool(agent, "big", "Returns a big text", "{\"type\":\"object\"}", big_tool,
                         NULL, NULL));
    OK(pi_agent_prompt(agent, "go"));
    char *json = NULL;
    OK(pi_agent_messages_json(agent, &json));
    size_t transcript = strlen(json);
    pi_string_free(json);
    pi_agent_free(agent);
    pi_model_free(model);
    pi_faux_free(faux);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double peak = (double)usage.ru_maxrss / 1024.0;
    printf("big result %ld MiB: peak RSS %.1f MiB (%.2f x the result), transcript %zu bytes\n",
           megabytes, peak, peak / (double)megabytes, transcript);
    return transcript > (size_t)megabytes << 20 ? 0 : 1;
}
