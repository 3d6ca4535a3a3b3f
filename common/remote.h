/* SPDX-License-Identifier: Apache-2.0 */
/* remote.h - remote channels: one channel region mirrored over a TCP
 * connection (TLS 1.3 with a pre-shared key or X.509 certificates both ways;
 * plain TCP only when an operator asks for it by name).
 *
 * Each end keeps a region of the usual layout (shm.h) in its own memory: the
 * guest process's frontend (frontend/channel/transport_remote.c) and, on the
 * GPU host, xgpud's relay (backend/transport/transport_remote.c), which hands
 * its copy to the domain's executor exactly as a local guest's memfd. A relay
 * at each end stands in for the far side on the four queues: it consumes what
 * its local producer publishes on the outbound queues and sends it as DATA
 * frames; it produces what arrives on the inbound queues and reports, in CONS
 * frames, how far its local consumer has read. An outbound unit is released
 * to the local producer only when the far consumer has read it, so the far
 * ring never holds more than a ring's worth and the local ring is the only
 * buffer.
 *
 * Every frame from the network is hostile: xgpu_remote_apply checks each
 * header, index and length against the relay's own state before anything is
 * written, and a frame that does not fit ends the connection.
 */
#ifndef XGPU_REMOTE_H
#define XGPU_REMOTE_H

#include "proto.h"
#include "queue.h"
#include "shm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define XGPU_REMOTE_MAGIC 0x4d524758u /* "XGRM" */
#define XGPU_REMOTE_DEFAULT_PORT 7447
/* The most bytes one frame carries; the receiver's buffer. */
#define XGPU_REMOTE_MAX_PAYLOAD (256u << 10)
/* A dead link or peer is noticed within this, whether or not anything is
 * in flight: TCP keepalive and TCP_USER_TIMEOUT for the link, and for a peer
 * whose host answers but whose relay stalls (a stopped xgpud), each writer
 * sends PING after XGPU_REMOTE_PING_MS without sending, and each reader gives
 * up after XGPU_REMOTE_DEAD_MS without receiving. */
#define XGPU_REMOTE_DEAD_MS 8000
#define XGPU_REMOTE_PING_MS 2000

enum xgpu_rframe_type {
	XGPU_RF_HELLO = 1, /* guest -> host: struct xgpu_remote_hello */
	XGPU_RF_ACK = 2,   /* host -> guest: struct xgpu_hello_ack */
	XGPU_RF_DATA = 3,  /* units of queue `queue` from index idx */
	XGPU_RF_CONS = 4,  /* the sender's consumer of queue `queue` is at idx */
	XGPU_RF_END = 5,   /* host -> guest: the executor ended with status idx */
	XGPU_RF_PING = 6,  /* either way: nothing else to say (liveness) */
};

enum { XGPU_RQ_REQ = 0, XGPU_RQ_RSP = 1, XGPU_RQ_TX = 2, XGPU_RQ_RX = 3, XGPU_RQ_COUNT = 4 };

struct xgpu_rframe {
	uint8_t type;
	uint8_t queue;
	uint16_t zero;
	uint32_t len; /* payload bytes after this header */
	uint32_t idx;
	uint32_t zero2;
};
_Static_assert(sizeof(struct xgpu_rframe) == 16, "frame header is 16 bytes");

struct xgpu_remote_hello {
	uint32_t magic;   /* XGPU_REMOTE_MAGIC */
	uint32_t version; /* XGPU_PROTO_VERSION */
	uint32_t nr_slots;
	uint32_t data_size;
	uint64_t region_size;
	struct xgpu_hello hello;
};

/* Checks a header on its own (type, queue, direction, length) for a relay at
 * the guest's end (guest true) or the host's. 0, or -1 with the reason. */
int xgpu_rframe_check(const struct xgpu_rframe *h, bool guest, char *err, size_t errlen);

struct xgpu_rconn;

/* One end's relay over its copy of the region. */
struct xgpu_rqueue {
	struct xgpu_queue *q;
	uint8_t *buf;
	uint32_t size, unit;
	uint32_t tag_flip; /* slot queues: the tag's flip (queue.h) */
	bool outbound;     /* our local peer produces it; we send */
	/* outbound: next index to send (writer) and the far consumer's index
	 * as last reported (reader, published as q->cons). */
	_Atomic uint32_t sent;
	uint32_t acked;
	/* inbound: our production (reader, published as q->prod) and the
	 * local consumer's index as last reported (writer). */
	_Atomic uint32_t prod;
	uint32_t reported;
};

struct xgpu_relay {
	bool guest; /* the guest's end, else the host's */
	struct xgpu_shm_header *hdr;
	struct xgpu_rqueue qs[XGPU_RQ_COUNT];
	/* Wakes the local peer (it asked to be kicked). */
	void (*kick)(void *arg);
	void *kick_arg;
};

/* Builds the relay over a region of size bytes already laid out (guest) or
 * laid out here from the same parameters (host). -1 with the reason. */
int xgpu_relay_init(struct xgpu_relay *r, bool guest, void *region, size_t size, char *err, size_t errlen);

/* Applies one checked frame from the network. Returns 0, 1 when it was END
 * (*end_status set), or -1 with the reason (the connection must end). */
int xgpu_remote_apply(struct xgpu_relay *r, const struct xgpu_rframe *h, const uint8_t *payload,
		      int32_t *end_status, char *err, size_t errlen);

/* Reads exactly len bytes from the network into buf: 0, or -1 with the
 * reason (xgpu_rconn_read for a connection; tests feed bytes of their own). */
typedef int (*xgpu_remote_read_fn)(void *ctx, void *buf, size_t len, char *err, size_t errlen);

/* Where a reader wants inbound bulk bytes of byte queue `queue` that start
 * at index at + got: straight into dst + got, while they fit in len, rather
 * than into the ring. The ring's producer index still moves past them, as
 * if they had been written there, so the far producer's flow control is
 * unchanged; the local consumer must then release them unread. */
struct xgpu_rdirect {
	unsigned queue;
	uint32_t at;
	uint8_t *dst;
	size_t len, got;
};

/* Reads one frame with read and applies it as xgpu_remote_apply does,
 * returning the same; bulk bytes are read straight into their ring once the
 * header is checked (or into direct's buffer, when given and they are the
 * bytes it waits for), other payloads into scratch (XGPU_REMOTE_MAX_PAYLOAD
 * bytes). */
int xgpu_remote_receive(struct xgpu_relay *r, xgpu_remote_read_fn read, void *ctx, uint8_t *scratch,
			struct xgpu_rdirect *direct, int32_t *end_status, char *err, size_t errlen);

/* Collects what the local peer published since the last call as frames
 * (DATA, CONS) into at most max_iov iovecs: headers and slots copied into
 * out (cap bytes), bulk bytes referred to in the ring, at most bulk_cap of
 * them (they stay put until the far side reports reading them). Returns the
 * number of iovecs (0: nothing to send), their bytes in *total, or -1 when
 * the local peer corrupted an index (reason in err). *more is set when a
 * limit stopped it. */
int xgpu_remote_collect(struct xgpu_relay *r, uint8_t *out, size_t cap, size_t bulk_cap, struct iovec *iov,
			int max_iov, size_t *total, bool *more, char *err, size_t errlen);
/* A sending turn's limits. */
#define XGPU_REMOTE_TURN_IOV 16
#define XGPU_REMOTE_TURN_BULK (1u << 20)

/* Sends up to len bulk bytes of outbound byte queue `queue` from src as DATA
 * frames, without their passing through the ring: the ring's producer p (the
 * guest's client) would otherwise copy them in only for the relay to send
 * them out again. They count against the ring's space as if copied, so flow
 * control is unchanged, and they are published and marked sent together,
 * before the send, so that neither the writer nor a CONS report ever sees
 * them in between. The caller holds the sending role, and every byte the
 * producer published earlier must have been sent (xgpu_remote_collect).
 * Returns the bytes sent (0: no space, or earlier bytes unsent), or -1 with
 * the reason. */
int64_t xgpu_remote_send_direct(struct xgpu_relay *r, struct xgpu_rconn *c, unsigned queue,
				struct xgpu_qend *p, const void *src, size_t len, char *err, size_t errlen);

/* Before the writer sleeps: asks the local peer for a kick on anything
 * new; the caller collects once more before sleeping. */
void xgpu_remote_arm(struct xgpu_relay *r);

/* ---- connections ------------------------------------------------------------ */

/* Reads a pre-shared key file: one line "identity:hexkey" (psktool's
 * format) or just "hexkey"; at least 16 bytes of key. The file must not be
 * readable by others. -1 with the reason. */
int xgpu_remote_read_psk(const char *path, char *identity, size_t idlen, uint8_t *key, size_t *keylen,
			 char *err, size_t errlen);

/* The GPU host's keys: one line "identity:hexkey" per tenant (psktool's
 * format; blank lines and lines starting with '#' are skipped), at most
 * XGPU_REMOTE_MAX_KEYS, identities distinct. A remote guest's domain is named
 * by the identity its handshake proved, never by what it asks for. */
#define XGPU_REMOTE_MAX_KEYS 64
struct xgpu_psk_table {
	unsigned n;
	struct {
		char identity[64];
		uint8_t key[64];
		size_t keylen;
	} e[XGPU_REMOTE_MAX_KEYS];
};
int xgpu_remote_read_psk_table(const char *path, struct xgpu_psk_table *t, char *err, size_t errlen);

/* The same from text in that format (the remote-psk key a Xen guest reads
 * from its backend directory). */
int xgpu_remote_parse_psk(const char *text, char *identity, size_t idlen, uint8_t *key, size_t *keylen,
			  char *err, size_t errlen);

/* Sets keepalive and TCP_USER_TIMEOUT so that a dead peer is noticed within
 * XGPU_REMOTE_DEAD_MS, and TCP_NODELAY. */
/* After the handshake: a receive fails after XGPU_REMOTE_DEAD_MS of silence. */
void xgpu_remote_set_silence_limit(int fd);
void xgpu_remote_tune_socket(int fd);

/* Wraps connected socket fd (which it takes): TLS 1.3 with the PSK, or
 * plain when key is NULL. Blocks for the handshake up to timeout_ms. NULL
 * with the reason in err. */
struct xgpu_rconn *xgpu_rconn_client(int fd, const char *identity, const uint8_t *key, size_t keylen,
				     int timeout_ms, char *err, size_t errlen);
/* Certificate credentials for either end: this end's certificate (chain)
 * and private key, and the CA whose signature the other end's certificate
 * must carry, all PEM. The key file must not be readable by others. Loaded
 * once and shared by connections; NULL with the reason. Each connection made
 * with them holds a reference, so the loader's xgpu_rcert_free may come
 * first (xgpud's reload of its credentials does). */
struct xgpu_rcert;
struct xgpu_rcert *xgpu_rcert_load(const char *cert_file, const char *key_file, const char *ca_file,
				   char *err, size_t errlen);
/* The same from PEM text (the keys xl-gpu writes for a Xen guest). */
struct xgpu_rcert *xgpu_rcert_load_mem(const char *cert, const char *key, const char *ca, char *err,
				       size_t errlen);
/* Another reference to rc (NULL for NULL), dropped by xgpu_rcert_free. */
struct xgpu_rcert *xgpu_rcert_ref(struct xgpu_rcert *rc);
void xgpu_rcert_free(struct xgpu_rcert *rc);
/* A PEM file's text into buf (len bytes with its NUL); a private key's
 * (secret) only when no other user may read it. 0, or -1 with the reason
 * (unreadable, larger than buf, not text). */
int xgpu_remote_read_pem(const char *path, bool secret, char *buf, size_t len, char *err, size_t errlen);
/* The most PEM text a Xen guest's backend key holds: a xenstore message
 * carries at most 4096 bytes, path included. */
#define XGPU_REMOTE_PEM_MAX 3500
/* TLS 1.3 with certificates both ways: presents cert's certificate and
 * accepts the GPU host's only when cert's CA signed it, it is in date, it
 * is for a TLS server, and it names host (the DNS name or IP address
 * dialled; a name is matched against the certificate's DNS names, an
 * address against its IP addresses). A refusal says why. */
struct xgpu_rconn *xgpu_rconn_client_cert(int fd, struct xgpu_rcert *cert, const char *host, int timeout_ms,
					  char *err, size_t errlen);
/* keys and cert both NULL: plain. The table is copied; the connection holds
 * a reference to cert until it is freed. With cert, a client may prove
 * itself with a certificate the CA signed for a TLS client, its identity
 * being its subject's common name; with keys too, either way is taken. */
struct xgpu_rconn *xgpu_rconn_server(int fd, const struct xgpu_psk_table *keys, struct xgpu_rcert *cert,
				     int timeout_ms, char *err, size_t errlen);
/* The identity the peer's handshake proved ("" on a plain connection): on
 * the GPU host, the client's PSK identity or its certificate's CN. */
const char *xgpu_rconn_identity(const struct xgpu_rconn *c);
/* Exactly len bytes; one thread may send while another receives. 0, or -1
 * with the reason in err. */
int xgpu_rconn_send(struct xgpu_rconn *c, const void *buf, size_t len, char *err, size_t errlen);
/* The n iovecs in order (iov is used up). */
int xgpu_rconn_sendv(struct xgpu_rconn *c, struct iovec *iov, int n, char *err, size_t errlen);
int xgpu_rconn_recv(struct xgpu_rconn *c, void *buf, size_t len, char *err, size_t errlen);
/* One turn of a relay's sending side: the frames the local rings hold, or a
 * ping after XGPU_REMOTE_PING_MS of silence, sent on c from buf (cap bytes).
 * 1: go round again at once; 0: nothing to send and the relay is armed, so
 * the caller sleeps until its kick (then clears *armed); -1: the rings or the
 * connection failed (err). *last_sent and *armed are the caller's state. */
int xgpu_remote_send_turn(struct xgpu_relay *r, struct xgpu_rconn *c, uint8_t *buf, size_t cap,
			  uint64_t *last_sent, bool *armed, char *err, size_t errlen);
/* xgpu_remote_read_fn over a struct xgpu_rconn. */
int xgpu_rconn_read(void *conn, void *buf, size_t len, char *err, size_t errlen);
/* Reads one frame: a checked header and its payload (into buf of
 * XGPU_REMOTE_MAX_PAYLOAD bytes). */
int xgpu_rconn_recv_frame(struct xgpu_rconn *c, bool guest, struct xgpu_rframe *h, uint8_t *buf, char *err,
			  size_t errlen);
int xgpu_rconn_fd(const struct xgpu_rconn *c);
/* Whether bytes already received wait in a buffer (the TLS layer's, or on
 * plain TCP the bytes read ahead), where polling the socket does not see
 * them. */
bool xgpu_rconn_pending(struct xgpu_rconn *c);
/* Unblocks both directions (another thread may be in send or recv). */
void xgpu_rconn_shutdown(struct xgpu_rconn *c);
void xgpu_rconn_free(struct xgpu_rconn *c);
/* Sends bulk bytes (in the ring, outside the turn's buffer) with
 * MSG_ZEROCOPY from now on: plain TCP only (TLS encrypts into its own
 * buffers). -1 with the reason when not possible. */
int xgpu_rconn_set_zerocopy(struct xgpu_rconn *c, char *err, size_t errlen);
/* Zerocopy sends made; completions reaped; of those, how many the kernel
 * copied anyway (SO_EE_CODE_ZEROCOPY_COPIED: loopback and veth deliver to a
 * local socket, which must own its data). */
void xgpu_rconn_zerocopy_stats(const struct xgpu_rconn *c, uint64_t *sends, uint64_t *done, uint64_t *copied);
/* The same over every connection of this process so far. */
void xgpu_rconn_zerocopy_totals(uint64_t *sends, uint64_t *done, uint64_t *copied);
/* "TLS1.3-PSK", "TLS1.3-X509" or "plain TCP". */
const char *xgpu_rconn_protocol(const struct xgpu_rconn *c);

#endif
