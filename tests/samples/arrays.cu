/* SPDX-License-Identifier: Apache-2.0 */
// arrays.cu - CUDA arrays as CUDA's samples use them: 1D, 2D and 3D arrays
// filled and read back with cudaMemcpy2DToArray / FromArray (host and
// device sides, sync and async), cudaMemcpy2DArrayToArray, cudaMemcpy3D
// with array sides at offsets, layered and cubemap arrays whose extent,
// flags and channel description read back, and copies past an array's end,
// which must be refused while the program carries on. Every result is
// compared with the same operation done on the host. The last line says
// "RESULT workload=arrays verified=yes" when all hold (tests/e2e/
// samples_arrays.sh runs it built with -cudart shared and with nvcc's
// default static runtime).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static int failures;

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess) {                                                                     \
			printf("arrays: line %d: %s returned %s\n", __LINE__, #call, cudaGetErrorName(e_));  \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

static void expect(bool ok, const char *what)
{
	printf("arrays: %s %s\n", what, ok ? "ok" : "wrong");
	if (!ok)
		failures++;
}

static float value_at(int x, int y, int z)
{
	return (float)(x * 7 + y * 1000 + z * 100000) + 0.25f;
}

// 2 * tex2D(tex, x + 0.5 + shift, y + 0.5) + 1, in texel or normalized
// coordinates.
extern "C" __global__ void tex_transform(cudaTextureObject_t tex, float *out, int w, int h, float shift,
					 int normalized)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x < w && y < h) {
		float u = x + 0.5f + shift, v = y + 0.5f;
		if (normalized) {
			u /= w;
			v /= h;
		}
		out[y * w + x] = 2.0f * tex2D<float>(tex, u, v) + 1.0f;
	}
}

// Each element becomes half itself plus x * 3 + y * 1000.
extern "C" __global__ void surf_fill(cudaSurfaceObject_t surf, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x < w && y < h) {
		float in = surf2Dread<float>(surf, x * 4, y);
		surf2Dwrite(in * 0.5f + (float)(x * 3 + y * 1000), surf, x * 4, y);
	}
}

static bool close_to(float a, float b)
{
	float d = a > b ? a - b : b - a, m = b < 0 ? -b : b;
	return d <= 1e-4f * (m > 1 ? m : 1);
}

// Texture objects over a2 (its elements value_at(x, y, 0)): point sampling
// with clamping, normalized coordinates with wrapping, linear filtering
// halfway between texels; then a surface read and written by a kernel.
static void textures(cudaArray_t a2, cudaArray_t b2, int w, int h)
{
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = a2;
	float *out, *host = (float *)malloc(sizeof(float) * w * h);
	CHECK(cudaMalloc((void **)&out, sizeof(float) * w * h));
	dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
	struct {
		const char *what;
		cudaTextureAddressMode mode;
		cudaTextureFilterMode filter;
		int normalized;
		float shift;
	} cases[] = {
	    {"texture object, point sampling, clamped", cudaAddressModeClamp, cudaFilterModePoint, 0, 3.0f},
	    {"texture object, normalized coordinates, wrapped", cudaAddressModeWrap, cudaFilterModePoint, 1,
	     5.0f},
	    {"texture object, linear filtering", cudaAddressModeClamp, cudaFilterModeLinear, 0, 0.5f},
	};
	for (auto &c : cases) {
		cudaTextureDesc td = {};
		td.addressMode[0] = td.addressMode[1] = c.mode;
		td.filterMode = c.filter;
		td.readMode = cudaReadModeElementType;
		td.normalizedCoords = c.normalized;
		cudaTextureObject_t tex = 0;
		CHECK(cudaCreateTextureObject(&tex, &rd, &td, NULL));
		tex_transform<<<grid, block>>>(tex, out, w, h, c.shift, c.normalized);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(host, out, sizeof(float) * w * h, cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				float want;
				if (c.filter == cudaFilterModeLinear) {
					int x1 = x + 1 < w ? x + 1 : w - 1;
					want = (value_at(x, y, 0) + value_at(x1, y, 0)) / 2;
				} else if (c.normalized) {
					want = value_at((x + (int)c.shift) % w, y, 0);
				} else {
					int sx = x + (int)c.shift;
					want = value_at(sx < w ? sx : w - 1, y, 0);
				}
				ok = ok && close_to(host[y * w + x], 2 * want + 1);
			}
		expect(ok, c.what);
		cudaTextureDesc tback = {};
		CHECK(cudaGetTextureObjectTextureDesc(&tback, tex));
		expect(tback.addressMode[0] == c.mode && tback.filterMode == c.filter &&
			   tback.normalizedCoords == c.normalized &&
			   tback.readMode == cudaReadModeElementType,
		       "texture object texture description");
		cudaResourceDesc back = {};
		CHECK(cudaGetTextureObjectResourceDesc(&back, tex));
		expect(back.resType == cudaResourceTypeArray && back.res.array.array == a2,
		       "texture object resource description");
		CHECK(cudaDestroyTextureObject(tex));
	}

	// b2 (made for load/store) filled from a2, then read and written.
	CHECK(cudaMemcpy2DArrayToArray(b2, 0, 0, a2, 0, 0, w * sizeof(float), h, cudaMemcpyDeviceToDevice));
	rd.res.array.array = b2;
	cudaSurfaceObject_t surf = 0;
	CHECK(cudaCreateSurfaceObject(&surf, &rd));
	surf_fill<<<grid, block>>>(surf, w, h);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy2DFromArray(host, w * sizeof(float), b2, 0, 0, w * sizeof(float), h,
				    cudaMemcpyDeviceToHost));
	bool ok = true;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			ok = ok &&
			     close_to(host[y * w + x], value_at(x, y, 0) * 0.5f + (float)(x * 3 + y * 1000));
	expect(ok, "surface object read and written by a kernel");
	CHECK(cudaDestroySurfaceObject(surf));
	CHECK(cudaFree(out));
	free(host);
}

int main()
{
	cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();

	// 1D: a row of floats, in from the host, back out through the device.
	const int n = 1000;
	float h1[n], back1[n];
	for (int i = 0; i < n; i++)
		h1[i] = value_at(i, 0, 0);
	cudaArray_t a1;
	CHECK(cudaMallocArray(&a1, &fdesc, n, 0, 0));
	CHECK(cudaMemcpy2DToArray(a1, 0, 0, h1, sizeof h1, sizeof h1, 1, cudaMemcpyHostToDevice));
	float *d1;
	CHECK(cudaMalloc((void **)&d1, sizeof h1));
	CHECK(cudaMemcpy2DFromArray(d1, sizeof h1, a1, 0, 0, sizeof h1, 1, cudaMemcpyDeviceToDevice));
	CHECK(cudaMemcpy(back1, d1, sizeof h1, cudaMemcpyDeviceToHost));
	expect(!memcmp(h1, back1, sizeof h1), "1D array host -> array -> device -> host");

	// 2D: host rows with a pitch of their own, into an array, to a second
	// array at an offset, out again; async on a stream too.
	const int w = 67, h = 33, hp = w + 5;
	float *h2 = (float *)calloc((size_t)hp * h, sizeof(float)),
	      *back2 = (float *)calloc((size_t)w * h, 4);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			h2[y * hp + x] = value_at(x, y, 0);
	cudaArray_t a2, b2;
	CHECK(cudaMallocArray(&a2, &fdesc, w, h, 0));
	CHECK(cudaMallocArray(&b2, &fdesc, w, h, cudaArraySurfaceLoadStore));
	CHECK(cudaMemcpy2DToArray(a2, 0, 0, h2, hp * sizeof(float), w * sizeof(float), h,
				  cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy2DFromArray(back2, w * sizeof(float), a2, 0, 0, w * sizeof(float), h,
				    cudaMemcpyDeviceToHost));
	bool ok = true;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			ok = ok && back2[y * w + x] == value_at(x, y, 0);
	expect(ok, "2D array host (pitched) -> array -> host");

	// A 20 x 10 box of a2 from (3, 4) to b2 at (10, 20).
	CHECK(cudaMemcpy2DArrayToArray(b2, 10 * sizeof(float), 20, a2, 3 * sizeof(float), 4,
				       20 * sizeof(float), 10, cudaMemcpyDeviceToDevice));
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	float box[10][20];
	CHECK(cudaMemcpy2DFromArrayAsync(box, sizeof box[0], b2, 10 * sizeof(float), 20, sizeof box[0], 10,
					 cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	ok = true;
	for (int y = 0; y < 10; y++)
		for (int x = 0; x < 20; x++)
			ok = ok && box[y][x] == value_at(x + 3, y + 4, 0);
	expect(ok, "2D array to array at offsets, read back async");

	// 3D: a 13 x 9 x 5 array of ints through cudaMemcpy3D, then a box at an
	// offset back out to a pitched device allocation.
	const int X = 13, Y = 9, Z = 5;
	cudaChannelFormatDesc idesc = cudaCreateChannelDesc<int>();
	int *h3 = (int *)malloc(sizeof(int) * X * Y * Z), *back3 = (int *)calloc(X * Y * Z, sizeof(int));
	for (int i = 0; i < X * Y * Z; i++)
		h3[i] = i * 3 + 1;
	cudaArray_t a3;
	CHECK(cudaMalloc3DArray(&a3, &idesc, make_cudaExtent(X, Y, Z), 0));
	cudaMemcpy3DParms in = {};
	in.srcPtr = make_cudaPitchedPtr(h3, X * sizeof(int), X, Y);
	in.dstArray = a3;
	in.extent = make_cudaExtent(X, Y, Z);
	in.kind = cudaMemcpyHostToDevice;
	CHECK(cudaMemcpy3D(&in));
	cudaPitchedPtr dev3;
	CHECK(cudaMalloc3D(&dev3, make_cudaExtent(X * sizeof(int), Y, Z)));
	cudaMemcpy3DParms out = {};
	out.srcArray = a3;
	out.srcPos = make_cudaPos(2, 1, 1);
	out.dstPtr = dev3;
	out.extent = make_cudaExtent(X - 2, Y - 1, Z - 1);
	out.kind = cudaMemcpyDeviceToDevice;
	CHECK(cudaMemcpy3D(&out));
	cudaMemcpy3DParms down = {};
	down.srcPtr = dev3;
	down.dstPtr = make_cudaPitchedPtr(back3, X * sizeof(int), X, Y);
	down.extent = make_cudaExtent((X - 2) * sizeof(int), Y - 1, Z - 1);
	down.kind = cudaMemcpyDeviceToHost;
	CHECK(cudaMemcpy3D(&down));
	ok = true;
	for (int z = 0; z < Z - 1; z++)
		for (int y = 0; y < Y - 1; y++)
			for (int x = 0; x < X - 2; x++)
				ok =
				    ok && back3[(z * Y + y) * X + x] == h3[((z + 1) * Y + y + 1) * X + x + 2];
	expect(ok, "3D array host -> array, box at an offset -> pitched device -> host");

	// Layered and cubemap arrays: their description reads back.
	cudaArray_t layered, cube;
	cudaChannelFormatDesc u4 = cudaCreateChannelDesc<uchar4>(), got;
	cudaExtent ext;
	unsigned flags = 0;
	CHECK(cudaMalloc3DArray(&layered, &u4, make_cudaExtent(32, 16, 4), cudaArrayLayered));
	CHECK(cudaArrayGetInfo(&got, &ext, &flags, layered));
	expect(ext.width == 32 && ext.height == 16 && ext.depth == 4 && flags == cudaArrayLayered &&
		   got.x == 8 && got.w == 8 && got.f == cudaChannelFormatKindUnsigned,
	       "layered array description");
	CHECK(cudaMalloc3DArray(&cube, &fdesc, make_cudaExtent(16, 16, 6), cudaArrayCubemap));
	CHECK(cudaArrayGetInfo(&got, &ext, &flags, cube));
	expect(ext.width == 16 && ext.height == 16 && ext.depth == 6 && flags == cudaArrayCubemap &&
		   got.x == 32 && got.y == 0 && got.f == cudaChannelFormatKindFloat,
	       "cubemap array description");
	cudaArray_t bad;
	expect(cudaMalloc3DArray(&bad, &fdesc, make_cudaExtent(16, 8, 6), cudaArrayCubemap) != cudaSuccess,
	       "a cubemap that is not square refused");
	cudaGetLastError(); // the refusal above is the last error, not a sticky one

	textures(a2, b2, w, h);

	// Past the end: refused, and the program carries on.
	expect(cudaMemcpy2DToArray(a2, 60 * sizeof(float), 0, h2, hp * sizeof(float), 10 * sizeof(float), 1,
				   cudaMemcpyHostToDevice) != cudaSuccess,
	       "a copy past the array's last column refused");
	expect(cudaMemcpy2DArrayToArray(b2, 0, 30, a2, 0, 0, sizeof(float), 5, cudaMemcpyDeviceToDevice) !=
		   cudaSuccess,
	       "an array to array copy past the last row refused");
	cudaGetLastError();

	CHECK(cudaFreeArray(a1));
	CHECK(cudaFreeArray(a2));
	CHECK(cudaFreeArray(b2));
	CHECK(cudaFreeArray(a3));
	CHECK(cudaFreeArray(layered));
	CHECK(cudaFreeArray(cube));
	CHECK(cudaFree(d1));
	CHECK(cudaFree(dev3.ptr));
	CHECK(cudaStreamDestroy(s));
	free(h2);
	free(back2);
	free(h3);
	free(back3);
	printf("RESULT workload=arrays verified=%s\n", failures ? "no" : "yes");
	return failures ? 1 : 0;
}
