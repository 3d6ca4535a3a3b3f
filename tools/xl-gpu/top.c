/* SPDX-License-Identifier: Apache-2.0 */
/* top.c - `xl-gpu top`, in the manner of xentop: one row per domain with
 * its credit, GPU slot and busy share, memory, call rate and p99 queue wait,
 * refreshed every few seconds, sortable from the keyboard; -b prints frames
 * for scripts instead.
 *
 * Rates are the difference of two successive stats snapshots divided by the
 * daemon's own uptime difference (its clock, not ours, so a slow request does
 * not skew them); the first frame compares against the daemon's start. The
 * p99 wait, too, is over the interval: the difference of the two snapshots'
 * wait histograms.
 * Plain ANSI escapes and termios rather than ncurses: the screen is one table
 * redrawn whole, which needs only "home, clear" and raw key input, and the
 * tool keeps no terminal library dependency. */
#include "top.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

enum top_column { COL_NAME, COL_DOMID, COL_CREDIT, COL_SLOT, COL_BUSY, COL_MEM, COL_CALLS, COL_WAIT, NCOLS };

static const char *const column_names[NCOLS] = {"name", "domid", "credit", "slot",
						"busy", "mem",   "calls",  "wait"};

struct top_row {
	const char *name;
	long long domid, gpu, credit;
	double slot_pct, busy_pct, mem_mib, calls_per_s, wait_p99_us;
	const char *executor; /* its state: none, starting, serving, stopping */
};

static enum top_column sort_column = COL_SLOT;
static bool sort_reverse; /* false: names ascending, numbers descending, as xentop */

static long long num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : (long long)json_number_value(v);
}

/* The previous snapshot's domain of the same name and domid, if any. */
static json_t *previous_domain(json_t *prev, json_t *d)
{
	size_t i;
	json_t *p;
	const char *name = json_string_value(json_object_get(d, "name"));
	json_array_foreach(json_object_get(prev, "domains"), i, p)
	{
		const char *pname = json_string_value(json_object_get(p, "name"));
		if (name && pname && !strcmp(name, pname) && num(p, "domid") == num(d, "domid"))
			return p;
	}
	return NULL;
}

/* Counter growth; a counter that went backwards (a restarted daemon or a
 * recreated domain) counts from zero. */
static double grown(json_t *now, json_t *before, const char *key)
{
	long long a = num(now, key), b = before ? num(before, key) : 0;
	return (double)(a >= b ? a - b : a);
}

/* Count of the histogram bucket with this upper edge in a wait_hist array
 * ([edge us, count] pairs). */
static double bucket_count(json_t *hist, double edge)
{
	size_t i;
	json_t *pair;
	json_array_foreach(hist, i, pair)
	{
		if (json_number_value(json_array_get(pair, 0)) == edge)
			return json_number_value(json_array_get(pair, 1));
	}
	return 0;
}

/* The pct percentile of the queue waits that happened between the two
 * snapshots, from the difference of their histograms (the upper edge of the
 * bucket it falls in, as the daemon computes it); 0 when there were none. */
static double interval_wait_us(json_t *now, json_t *before, double pct)
{
	json_t *hist = json_object_get(now, "wait_hist"),
	       *old = before ? json_object_get(before, "wait_hist") : NULL;
	size_t n = json_array_size(hist), i;
	double *delta = calloc(n ? n : 1, sizeof *delta), total = 0;
	if (!delta)
		return 0;
	json_t *pair;
	json_array_foreach(hist, i, pair)
	{
		double edge = json_number_value(json_array_get(pair, 0));
		double c = json_number_value(json_array_get(pair, 1)), b = old ? bucket_count(old, edge) : 0;
		delta[i] = c >= b ? c - b : c;
		total += delta[i];
	}
	double result = 0, rank = ceil(pct / 100.0 * total), seen = 0;
	if (rank < 1)
		rank = 1;
	for (i = 0; total > 0 && i < n; i++) {
		seen += delta[i];
		if (seen >= rank) {
			result = json_number_value(json_array_get(json_array_get(hist, i), 0));
			break;
		}
	}
	free(delta);
	return result;
}

static int compare_rows(const void *pa, const void *pb)
{
	const struct top_row *a = pa, *b = pb;
	int c = 0;
	double x = 0, y = 0;
	switch (sort_column) {
	case COL_NAME:
		c = strcmp(a->name, b->name);
		break;
	case COL_DOMID:
		c = (a->domid > b->domid) - (a->domid < b->domid);
		break;
	case COL_CREDIT:
		x = (double)a->credit, y = (double)b->credit;
		break;
	case COL_SLOT:
		x = a->slot_pct, y = b->slot_pct;
		break;
	case COL_BUSY:
		x = a->busy_pct, y = b->busy_pct;
		break;
	case COL_MEM:
		x = a->mem_mib, y = b->mem_mib;
		break;
	case COL_CALLS:
		x = a->calls_per_s, y = b->calls_per_s;
		break;
	case COL_WAIT:
	case NCOLS:
		x = a->wait_p99_us, y = b->wait_p99_us;
		break;
	}
	if (sort_column > COL_DOMID)
		c = (x < y) - (x > y); /* largest first */
	if (!c)
		c = strcmp(a->name, b->name);
	return sort_reverse ? -c : c;
}

/* Renders one frame into out: a summary line, the GPUs, the header (the
 * sort column marked) and the rows. lines_max bounds the rows shown (0: all). */
static void render(FILE *out, json_t *now, json_t *prev, int lines_max, const char *eol)
{
	double dt_ns = grown(now, prev, "uptime_ns");
	if (dt_ns <= 0)
		dt_ns = 1;
	json_t *doms = json_object_get(now, "domains");
	size_t n = json_array_size(doms), i;
	struct top_row *rows = calloc(n ? n : 1, sizeof *rows);
	if (!rows)
		return;
	json_t *d;
	json_array_foreach(doms, i, d)
	{
		json_t *p = previous_domain(prev, d);
		const char *name = json_string_value(json_object_get(d, "name"));
		rows[i] = (struct top_row){
		    .name = name ? name : "?",
		    .domid = num(d, "domid"),
		    .gpu = num(d, "gpu"),
		    .credit = num(d, "credit"),
		    .slot_pct = 100.0 * grown(d, p, "gpu_time_ns") / dt_ns,
		    .busy_pct = 100.0 * grown(d, p, "busy_ns") / dt_ns,
		    .mem_mib = (double)num(d, "mem_bytes") / 1048576.0,
		    .calls_per_s = grown(d, p, "calls") / (dt_ns / 1e9),
		    .wait_p99_us = interval_wait_us(d, p, 99),
		    .executor = json_string_value(json_object_get(d, "executor")),
		};
	}
	qsort(rows, n, sizeof *rows, compare_rows);

	time_t t = time(NULL);
	struct tm tm;
	char clock[16] = "";
	if (localtime_r(&t, &tm))
		strftime(clock, sizeof clock, "%H:%M:%S", &tm);
	fprintf(out, "xl-gpu top - %s  policy %s  tick %lld ms  %zu domains  interval %.1f s%s", clock,
		json_string_value(json_object_get(now, "policy")), num(now, "tick_ms"), n, dt_ns / 1e9, eol);
	json_t *g;
	json_array_foreach(json_object_get(now, "gpus"), i, g)
	{
		fprintf(out, "GPU %lld: %s (%s, policy %s, %lld domains)%s", num(g, "id"),
			json_string_value(json_object_get(g, "name")),
			json_string_value(json_object_get(g, "executor")),
			json_string_value(json_object_get(g, "policy")), num(g, "domains"), eol);
	}
	static const char *const headers[NCOLS] = {"NAME",  "DOMID",    "CREDIT",  "SLOT%",
						   "BUSY%", "MEM(MiB)", "CALLS/S", "P99WAIT(us)"};
	static const int widths[NCOLS] = {-20, 7, 8, 7, 7, 10, 10, 13};
	fputs(eol[0] == '\r' ? "\033[7m" : "", out); /* header in reverse video on a terminal */
	for (int c = 0; c < NCOLS; c++) {
		char h[24];
		/* The sort column is bracketed, so batch output shows it too. */
		snprintf(h, sizeof h, c == (int)sort_column ? "[%s]" : "%s", headers[c]);
		fprintf(out, "%s%*s", c ? " " : "", widths[c], h);
		if (c == 0)
			fprintf(out, " %3s", "GPU");
	}
	fprintf(out, " %-8s", "EXECUTOR"); /* its state; not a sort column */
	fprintf(out, "%s%s", eol[0] == '\r' ? "\033[0m" : "", eol);
	for (i = 0; i < n && (lines_max <= 0 || (int)i < lines_max); i++) {
		const struct top_row *r = &rows[i];
		fprintf(out, "%-20.20s %3lld %7lld %8lld %7.1f %7.1f %10.1f %10.1f %13.1f %-8.8s%s", r->name,
			r->gpu, r->domid, r->credit, r->slot_pct, r->busy_pct, r->mem_mib, r->calls_per_s,
			r->wait_p99_us, r->executor ? r->executor : "?", eol);
	}
	free(rows);
}

/* Writes text with each line cut at cols visible characters, as a narrow
 * terminal would otherwise wrap rows into each other; escape sequences
 * (ESC [ ... letter) take no column. */
static void put_clipped(FILE *out, const char *text, int cols)
{
	int col = 0;
	for (const char *p = text; *p; p++) {
		if (*p == '\033' && p[1] == '[') {
			const char *q = p + 2;
			while (*q && !((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z')))
				q++;
			if (!*q)
				break;
			fwrite(p, 1, (size_t)(q - p + 1), out);
			p = q;
		} else if (*p == '\r' || *p == '\n') {
			putc(*p, out);
			col = 0;
		} else if (col < cols) {
			putc(*p, out);
			col++;
		}
	}
}

static struct termios saved_termios;
static bool terminal_raw;
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void restore_terminal(void)
{
	if (!terminal_raw)
		return;
	/* Leave the alternate screen, show the cursor again. */
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
	terminal_raw = false;
}

static int enter_terminal(void)
{
	if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
		return -1;
	struct termios raw = saved_termios;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0)
		return -1;
	terminal_raw = true;
	fputs("\033[?1049h\033[?25l", stdout);
	return 0;
}

/* Applies one key; returns false when it asks to quit. */
static bool handle_key(int key, double *delay)
{
	switch (key) {
	case 'q':
	case 'Q':
		return false;
	case 's':
	case 'S':
		sort_column = (enum top_column)((sort_column + 1) % NCOLS);
		break;
	case 'r':
	case 'R':
		sort_reverse = !sort_reverse;
		break;
	case '+':
		*delay = *delay * 2 > 60 ? 60 : *delay * 2;
		break;
	case '-':
		*delay = *delay / 2 < 0.1 ? 0.1 : *delay / 2;
		break;
	default:
		if (key >= '1' && key < '1' + NCOLS)
			sort_column = (enum top_column)(key - '1');
		break;
	}
	return true;
}

static void top_usage(FILE *f)
{
	fprintf(f, "Usage: xl-gpu top [-b] [-n ITERATIONS] [-d SECONDS] [-s COLUMN] [-r]\n"
		   "  -b          batch mode: print frames to stdout, no terminal control\n"
		   "  -n N        stop after N frames (default: until 'q', or 1 with -b)\n"
		   "  -d SECONDS  delay between frames (default 3, at least 0.1)\n"
		   "  -s COLUMN   sort by name, domid, credit, slot, busy, mem, calls or wait\n"
		   "              (default slot; numbers largest first)\n"
		   "  -r          reverse the sort\n"
		   "Keys: 1-8 sort by that column, s/S next sort column, r/R reverse,\n"
		   "      +/- double/halve the delay, q/Q quit.\n");
}

int xlgpu_top(int argc, char **argv, json_t *(*fetch_stats)(void))
{
	bool batch = false;
	long iterations = -1;
	double delay = 3;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-b")) {
			batch = true;
		} else if (!strcmp(a, "-r")) {
			sort_reverse = true;
		} else if (!strcmp(a, "-n") && i + 1 < argc) {
			if (xgpu_parse_long(argv[++i], 1, 1000000, &iterations) < 0) {
				fprintf(stderr, "xl-gpu: top: -n %s: need a number of frames, 1 or more\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "-d") && i + 1 < argc) {
			char *end;
			errno = 0;
			delay = strtod(argv[++i], &end);
			if (errno || end == argv[i] || *end || !(delay >= 0.1 && delay <= 3600)) {
				fprintf(stderr, "xl-gpu: top: -d %s: need seconds from 0.1 to 3600\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "-s") && i + 1 < argc) {
			const char *want = argv[++i];
			int c = 0;
			while (c < NCOLS && strcmp(column_names[c], want))
				c++;
			if (c == NCOLS) {
				fprintf(
				    stderr,
				    "xl-gpu: top: -s %s: no such column (name, domid, credit, slot, busy, "
				    "mem, calls, wait)\n",
				    want);
				return 2;
			}
			sort_column = (enum top_column)c;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			top_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "xl-gpu: top: unexpected argument '%s'\n", a);
			top_usage(stderr);
			return 2;
		}
	}
	if (batch && iterations < 0)
		iterations = 1;
	if (!batch && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		fprintf(stderr, "xl-gpu: top: needs a terminal; use -b for batch output\n");
		return 2;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!batch && enter_terminal() < 0) {
		fprintf(stderr, "xl-gpu: top: cannot set up the terminal: %s\n", strerror(errno));
		return 1;
	}
	json_t *prev = NULL;
	int status = 0;
	for (long frame = 0; iterations < 0 || frame < iterations; frame++) {
		json_t *now = fetch_stats();
		if (!now && terminal_raw) {
			/* Why went to the alternate screen, which is about to go:
			 * ask once more on the ordinary one, so the reason stays. */
			restore_terminal();
			now = fetch_stats();
			json_decref(now);
			now = NULL;
		}
		if (!now) {
			status = 1;
			break;
		}
		if (batch) {
			if (frame)
				putchar('\n');
			render(stdout, now, prev, 0, "\n");
		} else {
			struct winsize ws = {0};
			bool sized = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0;
			int rows = sized && ws.ws_row ? ws.ws_row : 24,
			    cols = sized && ws.ws_col ? ws.ws_col : 80;
			char *screen = NULL;
			size_t screen_len = 0;
			FILE *mem = open_memstream(&screen, &screen_len);
			if (!mem) {
				json_decref(now);
				status = 1;
				break;
			}
			/* Raw mode keeps output processing, but \r\n is explicit so the
			 * rows start at column 0 whatever the terminal's settings. */
			render(mem, now, prev, rows - 4 - (int)json_array_size(json_object_get(now, "gpus")),
			       "\r\n");
			fclose(mem);
			fputs("\033[H\033[2J", stdout);
			put_clipped(stdout, screen, cols);
			free(screen);
		}
		fflush(stdout);
		json_decref(prev);
		prev = now;
		if (iterations >= 0 && frame + 1 >= iterations)
			break;
		/* Wait out the delay, answering keys as they come. */
		struct timespec start;
		clock_gettime(CLOCK_MONOTONIC, &start);
		bool redraw = false, quit = false;
		while (!redraw && !quit && !stop_requested) {
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			double left = delay - ((double)(t.tv_sec - start.tv_sec) +
					       (double)(t.tv_nsec - start.tv_nsec) / 1e9);
			if (left <= 0)
				break;
			struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
			int r = poll(&pfd, batch ? 0 : 1, (int)ceil(left * 1000));
			if (r > 0) {
				char keys[16];
				ssize_t got = read(STDIN_FILENO, keys, sizeof keys);
				for (ssize_t k = 0; k < got && !quit; k++)
					quit = !handle_key((unsigned char)keys[k], &delay);
				redraw = got > 0;
			}
		}
		if (quit || stop_requested)
			break;
		/* A key redraws at once; the rates then cover the shorter interval. */
	}
	json_decref(prev);
	restore_terminal();
	return status;
}
