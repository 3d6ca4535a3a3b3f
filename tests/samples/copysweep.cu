/* SPDX-License-Identifier: Apache-2.0 */
// copysweep.cu - pageable copies of every size class the executor treats
// differently, each way, checked byte for byte: one byte; one 256 KiB chunk
// and either side of it (a copy of one chunk or less is staged, a longer one
// goes by DMA straight between the channel's data area and the device);
// the data area's size and either side of it (the ring wraps inside a
// chunk); unaligned host and device addresses; pitched 2D copies whose rows
// cross chunk ends; copies queued behind other work on their stream (staged
// again, so that they do not wait for it) and async ones on a stream of
// their own. Run under several XGPU_DATA_SIZE values by
// tests/e2e/copy_sweep.sh.
#include "sample.h"

#include <cstdint>
#include <cstring>

static int checks;
static bool ok = true;

static uint8_t pattern(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;
	return (uint8_t)(x ^ (x >> 13) ^ (x >> 24));
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i, seed);
}

// The first byte of p[0, n) that is not pattern(, seed), or n.
static size_t first_wrong(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pattern(i, seed))
			return i;
	return n;
}

static uint32_t checksum;

static void verify(const char *what, size_t size, const uint8_t *p, size_t n, uint32_t seed)
{
	size_t at = first_wrong(p, n, seed);
	checks++;
	if (at != n) {
		printf("%s of %zu bytes: byte %zu is %02x, expected %02x\n", what, size, at, p[at],
		       pattern(at, seed));
		ok = false;
	}
	for (size_t i = 0; i < n; i += 4099)
		checksum = checksum * 31u + p[i];
}

int main(int argc, char **argv)
{
	const size_t K = 1024, M = K * K, chunk = 256 * K;
	// The data area the test runs under (XGPU_DATA_SIZE), for the sizes
	// around it; 4 MiB is the frontend's default.
	size_t area = argc > 1 ? strtoul(argv[1], NULL, 0) : 4 * M;
	if (area < 64 * K || area > 256 * M) {
		fprintf(stderr, "usage: copysweep [DATA_AREA_BYTES, 64K..256M]\n");
		return 2;
	}
	const size_t sizes[] = {
	    1,    4096,     chunk - 1,        chunk,           chunk + 1, 2 * chunk, 3 * chunk + 7, area - 1,
	    area, area + 1, area + chunk + 3, 2 * area + 4097, 9 * M + 17};
	const size_t max = 2 * area + 4097 > 9 * M + 17 ? 2 * area + 4097 : 9 * M + 17;
	const size_t pad = 64;
	uint8_t *host = (uint8_t *)malloc(max + pad), *back = (uint8_t *)malloc(max + pad);
	uint8_t *dev, *busy;
	if (!host || !back) {
		fprintf(stderr, "copysweep: out of host memory\n");
		return 1;
	}
	CHECK(cudaMalloc(&dev, max + pad));
	CHECK(cudaMalloc(&busy, 16 * M));
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	uint32_t seed = 1;

	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		// Aligned, then host and device both off by a few bytes.
		for (size_t off = 0; off <= 5; off += 5) {
			fill(host + off, n, ++seed);
			memset(back, 0, n + pad);
			CHECK(cudaMemcpy(dev + off, host + off, n, cudaMemcpyHostToDevice));
			CHECK(cudaMemcpy(back + 3, dev + off, n, cudaMemcpyDeviceToHost));
			verify(off ? "unaligned copy" : "copy", n, back + 3, n, seed);
		}
		// Queued behind a 16 MiB memset on the same stream: the host to
		// device copy must still carry the bytes of the moment it was
		// called, and the memset must land first.
		fill(host, n, ++seed);
		CHECK(cudaMemsetAsync(busy, 7, 16 * M, 0));
		CHECK(cudaMemsetAsync(dev, 0, n, 0));
		CHECK(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0));
		memset(host, 0xee, n); // after the call: must not reach the device
		CHECK(cudaMemcpy(back, dev, n, cudaMemcpyDeviceToHost));
		verify("copy behind a memset", n, back, n, seed);
		// Async both ways on a stream of its own.
		fill(host, n, ++seed);
		CHECK(cudaMemcpyAsync(dev + 1, host, n, cudaMemcpyHostToDevice, s));
		CHECK(cudaMemcpyAsync(back, dev + 1, n, cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamSynchronize(s));
		verify("async copy on a stream", n, back, n, seed);
	}
	uint8_t probe = 0;
	CHECK(cudaMemcpy(&probe, busy + 16 * M - 1, 1, cudaMemcpyDeviceToHost));
	TRUE(probe == 7);

	// Pitched 2D: odd widths, so rows cross the chunk ends; the rows
	// between them on the device must be left alone.
	const size_t widths[] = {61, 3001, 65537};
	for (size_t w : widths) {
		size_t height = (3 * chunk) / w + 3, pitch;
		uint8_t *d2;
		CHECK(cudaMallocPitch(&d2, &pitch, w, height));
		CHECK(cudaMemset(d2, 0x5a, pitch * height));
		size_t n = w * height;
		uint8_t *h = (uint8_t *)malloc(n), *b = (uint8_t *)malloc(pitch * height);
		if (!h || !b) {
			fprintf(stderr, "copysweep: out of host memory\n");
			return 1;
		}
		fill(h, n, ++seed);
		CHECK(cudaMemcpy2D(d2, pitch, h, w, w, height, cudaMemcpyHostToDevice));
		memset(b, 0, n);
		CHECK(cudaMemcpy2D(b, w, d2, pitch, w, height, cudaMemcpyDeviceToHost));
		verify("2D copy", n, b, n, seed);
		// The padding between rows: the 0x5a of the memset.
		CHECK(cudaMemcpy(b, d2, pitch * height, cudaMemcpyDeviceToHost));
		for (size_t row = 0; row < height; row++)
			for (size_t col = w; col < pitch; col += 7)
				if (b[row * pitch + col] != 0x5a) {
					printf("2D copy of width %zu wrote into row %zu's padding\n", w, row);
					ok = false;
					row = height;
					break;
				}
		checks++;
		free(h);
		free(b);
		CHECK(cudaFree(d2));
	}

	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(busy));
	CHECK(cudaFree(dev));
	free(host);
	free(back);
	printf("RESULT copysweep verified=%s checks=%d checksum=%08x\n", ok ? "yes" : "no", checks, checksum);
	return ok ? 0 : 1;
}
