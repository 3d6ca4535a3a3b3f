/* SPDX-License-Identifier: Apache-2.0 */
/* prometheus.c - `xl-gpu stats --prometheus`: the daemon's stats object in
 * Prometheus's text exposition format (version 0.0.4), for a textfile
 * collector or a scrape wrapper, so operators can graph shares over time.
 *
 * Each family gets its HELP and TYPE lines once, then one sample per GPU or
 * domain; the daemon's nanosecond counters become seconds (Prometheus's base
 * unit) and counters end in _total. Label values are escaped as the format
 * says, since domain names come from the processes and guests that chose
 * them. */
#include "top.h"

#include <math.h>
#include <string.h>

enum metric_kind { COUNTER, GAUGE };

struct domain_metric {
	const char *name; /* family name, without the xgpu_domain_ prefix */
	const char *key;  /* stats key */
	enum metric_kind kind;
	double scale; /* value = stats value * scale */
	const char *help;
};

static const struct domain_metric domain_metrics[] = {
    {"calls_total", "calls", COUNTER, 1, "Calls the domain made."},
    {"errors_total", "errors", COUNTER, 1, "Calls refused or failed."},
    {"gpu_time_seconds_total", "gpu_time_ns", COUNTER, 1e-9, "Time the domain held the GPU slot."},
    {"busy_seconds_total", "busy_ns", COUNTER, 1e-9, "Measured device busy time of the domain's work."},
    {"h2d_bytes_total", "h2d_bytes", COUNTER, 1, "Bytes copied from host to device."},
    {"d2h_bytes_total", "d2h_bytes", COUNTER, 1, "Bytes copied from device to host."},
    {"kernels_total", "kernels", COUNTER, 1, "Kernels launched."},
    {"kernel_timeouts_total", "timeouts", COUNTER, 1, "Contexts destroyed by the kernel timeout."},
    {"slot_wait_seconds_total", "slot_wait_ns", COUNTER, 1e-9, "Time the domain waited for the GPU slot."},
    {"channels_opened_total", "channels_total", COUNTER, 1, "Channels (processes) the domain opened."},
    {"credit", "credit", GAUGE, 1, "The domain's GPU credit (share weight)."},
    {"sla", "sla", GAUGE, 1, "The GPU share the domain expects (0: none)."},
    {"channels", "channels", GAUGE, 1, "Channels (processes) open now."},
    {"memory_bytes", "mem_bytes", GAUGE, 1, "Device memory the domain holds now."},
    {"memory_limit_bytes", "mem_limit", GAUGE, 1, "The domain's device memory limit (0: none)."},
    {"latency_p50_seconds", "lat_p50_us", GAUGE, 1e-6, "Median service time of a call since start."},
    {"latency_p99_seconds", "lat_p99_us", GAUGE, 1e-6, "99th percentile service time since start."},
    {"wait_p50_seconds", "wait_p50_us", GAUGE, 1e-6, "Median queue wait of a call since start."},
    {"wait_p99_seconds", "wait_p99_us", GAUGE, 1e-6, "99th percentile queue wait since start."},
};

/* A label value, escaped: backslash, double quote and newline. */
static void put_label_value(FILE *out, const char *s)
{
	putc('"', out);
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			putc(*s, out);
	}
	putc('"', out);
}

static double value_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (double)json_integer_value(v) : json_number_value(v);
}

static void put_value(FILE *out, json_t *o, const char *key, double scale)
{
	json_t *v = json_object_get(o, key);
	if (json_is_integer(v) && scale == 1)
		fprintf(out, " %lld\n", (long long)json_integer_value(v));
	else
		fprintf(out, " %.9g\n", value_of(o, key) * scale);
}

static void put_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_domain_labels(FILE *out, json_t *d)
{
	fputs("domain=", out);
	put_label_value(out, json_string_value(json_object_get(d, "name")));
	fprintf(out, ",domid=\"%lld\",gpu=\"%lld\"", (long long)value_of(d, "domid"),
		(long long)value_of(d, "gpu"));
}

/* The queue wait as a Prometheus histogram: buckets at powers of four
 * microseconds (1 us to about 4 s), each the sum of the daemon's finer
 * buckets at or under it (their power-of-two edges are exact), so the set
 * of series stays the same from scrape to scrape. */
static void put_wait_histogram(FILE *out, json_t *doms)
{
	const char *family = "xgpu_domain_queue_wait_seconds";
	put_family(out, family, "histogram",
		   "Time requests waited between leaving the ring and running (the GPU slot included).");
	size_t i;
	json_t *d;
	json_array_foreach(doms, i, d)
	{
		json_t *hist = json_object_get(d, "wait_hist");
		double total = 0;
		for (size_t k = 0; k < json_array_size(hist); k++)
			total += json_number_value(json_array_get(json_array_get(hist, k), 1));
		for (int e = 0; e <= 22; e += 2) {
			double le_us = ldexp(1.0, e), below = 0;
			for (size_t k = 0; k < json_array_size(hist); k++) {
				json_t *pair = json_array_get(hist, k);
				if (json_number_value(json_array_get(pair, 0)) <= le_us)
					below += json_number_value(json_array_get(pair, 1));
			}
			fprintf(out, "%s_bucket{", family);
			put_domain_labels(out, d);
			fprintf(out, ",le=\"%.9g\"} %.0f\n", le_us * 1e-6, below);
		}
		fprintf(out, "%s_bucket{", family);
		put_domain_labels(out, d);
		fprintf(out, ",le=\"+Inf\"} %.0f\n", total);
		fprintf(out, "%s_sum{", family);
		put_domain_labels(out, d);
		fprintf(out, "} %.9g\n", value_of(d, "queue_wait_ns") * 1e-9);
		fprintf(out, "%s_count{", family);
		put_domain_labels(out, d);
		fprintf(out, "} %.0f\n", total);
	}
}

void xlgpu_print_prometheus(FILE *out, json_t *stats)
{
	put_family(out, "xgpu_uptime_seconds", "gauge", "Time since xgpud started.");
	fprintf(out, "xgpu_uptime_seconds %.9g\n", value_of(stats, "uptime_ns") * 1e-9);
	put_family(out, "xgpu_tick_seconds", "gauge", "The scheduler's time slice.");
	fprintf(out, "xgpu_tick_seconds %.9g\n", value_of(stats, "tick_ms") * 1e-3);

	json_t *gpus = json_object_get(stats, "gpus"), *g;
	size_t i;
	put_family(out, "xgpu_gpu_info", "gauge", "A GPU xgpud shares: its name, executor and policy.");
	json_array_foreach(gpus, i, g)
	{
		fprintf(out, "xgpu_gpu_info{gpu=\"%lld\",name=", (long long)value_of(g, "id"));
		put_label_value(out, json_string_value(json_object_get(g, "name")));
		fputs(",executor=", out);
		put_label_value(out, json_string_value(json_object_get(g, "executor")));
		fputs(",policy=", out);
		put_label_value(out, json_string_value(json_object_get(g, "policy")));
		fputs("} 1\n", out);
	}
	put_family(out, "xgpu_gpu_domains", "gauge", "Domains on the GPU.");
	json_array_foreach(gpus, i, g)
	{
		fprintf(out, "xgpu_gpu_domains{gpu=\"%lld\"}", (long long)value_of(g, "id"));
		put_value(out, g, "domains", 1);
	}
	put_family(out, "xgpu_gpu_memory_bytes", "gauge", "The GPU's device memory.");
	json_array_foreach(gpus, i, g)
	{
		fprintf(out, "xgpu_gpu_memory_bytes{gpu=\"%lld\"}", (long long)value_of(g, "id"));
		put_value(out, g, "total_mem", 1);
	}

	json_t *doms = json_object_get(stats, "domains"), *d;
	for (size_t m = 0; m < sizeof domain_metrics / sizeof domain_metrics[0]; m++) {
		const struct domain_metric *dm = &domain_metrics[m];
		char family[96];
		snprintf(family, sizeof family, "xgpu_domain_%s", dm->name);
		put_family(out, family, dm->kind == COUNTER ? "counter" : "gauge", dm->help);
		json_array_foreach(doms, i, d)
		{
			fprintf(out, "%s{", family);
			put_domain_labels(out, d);
			putc('}', out);
			put_value(out, d, dm->key, dm->scale);
		}
	}
	put_wait_histogram(out, doms);
}
