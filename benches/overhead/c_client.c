/* The C client of the overhead benchmark: pi-agent's pull stream (pi_stream_open /
 * pi_stream_next), each text delta read as the C view gives it (no JSON).
 *
 *   c_client PORT ROUNDS FRAMES INTERVAL_US BURST */
#include "common.h"

#include "pi_agent.h"

static pi_model *model_for(int port, const char *id) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"id\":\"%s\",\"name\":\"%s\",\"api\":\"openai-completions\",\"provider\":\"openai\","
             "\"baseUrl\":\"http://127.0.0.1:%d/v1\"}",
             id, id, port);
    pi_model *model = NULL;
    pi_error *err = pi_model_from_json(json, &model);
    if (err) {
        pi_str m = pi_error_message(err);
        fprintf(stderr, "pi_model_from_json: %.*s\n", (int)m.len, m.data);
        exit(1);
    }
    return model;
}

static const char *CONTEXT = "{\"messages\":[{\"role\":\"user\",\"content\":\"go\",\"timestamp\":0}]}";

static long request(pi_model *model, long long *first, samples *lat) {
    pi_stream *stream = NULL;
    pi_error *err = pi_stream_open(model, CONTEXT, "{\"apiKey\":\"k\"}", &stream);
    if (err) exit(1);
    pi_event event;
    long frames = 0;
    while (pi_stream_next(stream, &event)) {
        if (event.kind != PI_STREAM_EVENT_KIND_TEXT_DELTA) continue;
        long long now = mono_ns();
        if (frames++ == 0 && first) *first = now;
        if (lat) record_frame(lat, event.delta.data, event.delta.len, now);
    }
    pi_stream_free(stream);
    return frames;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: c_client PORT ROUNDS FRAMES INTERVAL_US BURST\n");
        return 2;
    }
    int port = atoi(argv[1]), rounds = atoi(argv[2]);
    long burst = atol(argv[5]);
    char paced[64], bursty[64];
    snprintf(paced, sizeof paced, "paced-%s-%s", argv[3], argv[4]);
    snprintf(bursty, sizeof bursty, "burst-%ld", burst);
    pi_model *paced_model = model_for(port, paced), *burst_model = model_for(port, bursty);
    samples ttfe = {0}, lat = {0};
    long idle = status_kb("VmRSS:");
    for (int r = 0; r < rounds; r++) {
        long long first = 0, start = mono_ns();
        request(paced_model, &first, &lat);
        push(&ttfe, first - start);
    }
    double cpu = cpu_seconds();
    long got = request(burst_model, NULL, NULL);
    cpu = cpu_seconds() - cpu;
    if (got != burst) fprintf(stderr, "c_client: %ld of %ld burst frames\n", got, burst);
    print_result(&ttfe, &lat, cpu, burst, idle, status_kb("VmRSS:"));
    pi_model_free(paced_model);
    pi_model_free(burst_model);
    return 0;
}
