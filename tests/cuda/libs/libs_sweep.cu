/* SPDX-License-Identifier: Apache-2.0 */
// libs_sweep.cu - NVIDIA's libraries over the shapes at which they choose
// different kernels, through whichever libcuda.so.1 the loader finds
// (xgpu's on the simulated driver in tests/e2e/libs_sweep.sh). Built with
// nvcc's default static runtime and linked to the toolkit's libraries as a
// user's program would be.
//
//   libs_sweep [SECTION...]     sections: cublas cublaslt cusparse cusolver
//                               curand cufft cudnn cudnn_backend (all when
//                               none is named)
//
// Every step prints "libs_sweep: STEP STATUS" (0 is success) and the run
// ends with "libs_sweep: N steps, P passed, F failed"; the exit status is
// 1 when a step failed. A step is one library call whose status is checked,
// at one shape, routine and algorithm. The sim driver computes nothing for
// NVIDIA's kernels, so results are not judged: the point is that every
// call is served (a refused driver call or private table turns into a
// library status that is not success, or a crash).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <cufft.h>
#include <curand.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static unsigned steps, passed;

// step(status, "format", ...): one checked call; returns whether it passed.
static bool step(int status, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	steps++;
	if (status == 0)
		passed++;
	printf("libs_sweep: %s %d%s\n", what, status, status ? " FAILED" : "");
	fflush(stdout);
	return status == 0;
}

// Device memory that every section draws from: one buffer, filled with small
// values so that anything a library reads back is finite.
static void *dev_alloc(size_t bytes)
{
	void *p = nullptr;
	if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
		printf("libs_sweep: cudaMalloc(%zu) failed\n", bytes);
		exit(2);
	}
	cudaMemset(p, 0, bytes ? bytes : 1);
	return p;
}

static const int square[] = {1, 2, 7, 96, 128, 257, 1024};

/* ---- cuBLAS ------------------------------------------------------------ */

static void sweep_cublas()
{
	cublasHandle_t h;
	if (!step(cublasCreate(&h), "cublas create"))
		return;
	cudaStream_t stream;
	cudaStreamCreate(&stream);
	step(cublasSetStream(h, stream), "cublas set_stream");
	const size_t maxn = 1024;
	float *a = (float *)dev_alloc(maxn * maxn * 4), *b = (float *)dev_alloc(maxn * maxn * 4),
	      *c = (float *)dev_alloc(maxn * maxn * 4);
	const float one = 1, zero = 0;
	const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T};
	for (int n : square) {
		for (cublasOperation_t ta : ops)
			for (cublasOperation_t tb : ops)
				step(cublasSgemm(h, ta, tb, n, n, n, &one, a, n, b, n, &zero, c, n),
				     "cublas sgemm %c%c n=%d", ta ? 'T' : 'N', tb ? 'T' : 'N', n);
		for (cublasOperation_t t : ops)
			step(cublasSgemv(h, t, n, n, &one, a, n, b, 1, &zero, c, 1), "cublas sgemv %c n=%d",
			     t ? 'T' : 'N', n);
	}
	// Rectangular and split-K shapes: long k, small m and n.
	const int rect[][3] = {{1, 1024, 1024},     {1024, 1, 1024}, {1024, 1024, 1}, {64, 64, 16384},
			       {32, 32, 65536 / 4}, {128, 96, 8192}, {16, 16, 4096},  {257, 33, 4099}};
	for (auto &s : rect) {
		int m = s[0], n = s[1], k = s[2];
		float *ka = (float *)dev_alloc((size_t)m * k * 4),
		      *kb = (float *)dev_alloc((size_t)k * n * 4),
		      *kc = (float *)dev_alloc((size_t)m * n * 4);
		step(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, ka, m, kb, k, &zero, kc, m),
		     "cublas sgemm m=%d n=%d k=%d", m, n, k);
		step(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, ka, k, kb, k, &zero, kc, m),
		     "cublas sgemm TN m=%d n=%d k=%d", m, n, k);
		cudaFree(ka);
		cudaFree(kb);
		cudaFree(kc);
	}
	// Strided batched.
	const int bsizes[] = {1, 7, 64, 128, 257};
	const int batches[] = {1, 3, 17};
	for (int n : bsizes)
		for (int batch : batches) {
			size_t per = (size_t)n * n;
			if (per * batch > maxn * maxn)
				continue;
			step(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, per,
						       b, n, per, &zero, c, n, per, batch),
			     "cublas sgemm_strided_batched n=%d batch=%d", n, batch);
		}
	// Double, half, GemmEx with tensor cores, Level 1.
	for (int n : {1, 7, 96, 257}) {
		const double done = 1, dzero = 0;
		step(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &done, (double *)a, n, (double *)b, n,
				 &dzero, (double *)c, n),
		     "cublas dgemm n=%d", n);
		const __half hone = __float2half(1.f), hzero = __float2half(0.f);
		step(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &hone, (__half *)a, n, (__half *)b, n,
				 &hzero, (__half *)c, n),
		     "cublas hgemm n=%d", n);
		step(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, b, CUDA_R_16F,
				  n, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
		     "cublas gemm_ex f16->f32 n=%d", n);
		step(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_32F, n, b, CUDA_R_32F,
				  n, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
				  CUBLAS_GEMM_DEFAULT),
		     "cublas gemm_ex tf32 n=%d", n);
	}
	for (int n : {1, 7, 1000, 1 << 16}) {
		float r = 0;
		int idx = 0;
		step(cublasSaxpy(h, n, &one, a, 1, c, 1), "cublas saxpy n=%d", n);
		step(cublasSdot(h, n, a, 1, b, 1, &r), "cublas sdot n=%d", n);
		step(cublasSnrm2(h, n, a, 1, &r), "cublas snrm2 n=%d", n);
		step(cublasIsamax(h, n, a, 1, &idx), "cublas isamax n=%d", n);
		step(cublasSscal(h, n, &one, c, 1), "cublas sscal n=%d", n);
	}
	step(cublasStrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, 64, 64,
			 &one, a, 64, c, 64),
	     "cublas strsm n=64");
	step(cublasSsyrk(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, 96, 96, &one, a, 96, &zero, c, 96),
	     "cublas ssyrk n=96");
	step((int)cudaStreamSynchronize(stream), "cublas stream_synchronize");
	cudaFree(a);
	cudaFree(b);
	cudaFree(c);
	step(cublasDestroy(h), "cublas destroy");
	cudaStreamDestroy(stream);
}

/* ---- cuBLASLt: every algorithm the heuristic offers --------------------- */

static void lt_shape(cublasLtHandle_t lt, int m, int n, int k, cudaDataType_t type, void *a, void *b, void *c,
		     void *workspace, size_t wsbytes)
{
	const char *tn = type == CUDA_R_16F ? "f16" : "f32";
	cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	if (!step(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "cublaslt desc %s m=%d n=%d k=%d", tn,
		  m, n, k))
		return;
	cublasLtMatrixLayoutCreate(&la, type, m, k, m);
	cublasLtMatrixLayoutCreate(&lb, type, k, n, k);
	cublasLtMatrixLayoutCreate(&lc, type, m, n, m);
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulPreferenceCreate(&pref);
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsbytes,
					     sizeof wsbytes);
	cublasLtMatmulHeuristicResult_t results[16];
	int found = 0;
	if (step(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 16, results, &found),
		 "cublaslt heuristic %s m=%d n=%d k=%d", tn, m, n, k)) {
		step(found > 0 ? 0 : -1, "cublaslt heuristic %s m=%d n=%d k=%d found %d", tn, m, n, k, found);
		const float one = 1, zero = 0;
		for (int i = 0; i < found; i++)
			step(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, c, lc, c, lc,
					    &results[i].algo, workspace, wsbytes, 0),
			     "cublaslt matmul %s m=%d n=%d k=%d algo %d/%d (workspace %zu)", tn, m, n, k, i,
			     found, results[i].workspaceSize);
	}
	cublasLtMatmulPreferenceDestroy(pref);
	cublasLtMatrixLayoutDestroy(la);
	cublasLtMatrixLayoutDestroy(lb);
	cublasLtMatrixLayoutDestroy(lc);
	cublasLtMatmulDescDestroy(desc);
}

static void sweep_cublaslt()
{
	cublasLtHandle_t lt;
	if (!step(cublasLtCreate(&lt), "cublaslt create"))
		return;
	const size_t maxn = 1024, wsbytes = 32 << 20;
	void *a = dev_alloc(maxn * maxn * 4), *b = dev_alloc(maxn * maxn * 4),
	     *c = dev_alloc(maxn * maxn * 4);
	void *ws = dev_alloc(wsbytes);
	const int shapes[][3] = {{128, 128, 128},      {96, 96, 96},       {257, 257, 257}, {1, 1024, 1024},
				 {64, 64, 16384 / 16}, {1024, 1024, 1024}, {7, 7, 7}};
	for (auto &s : shapes) {
		lt_shape(lt, s[0], s[1], s[2], CUDA_R_32F, a, b, c, ws, wsbytes);
		lt_shape(lt, s[0], s[1], s[2], CUDA_R_16F, a, b, c, ws, wsbytes);
	}
	step((int)cudaDeviceSynchronize(), "cublaslt synchronize");
	cudaFree(a);
	cudaFree(b);
	cudaFree(c);
	cudaFree(ws);
	step(cublasLtDestroy(lt), "cublaslt destroy");
}

/* ---- cuSPARSE: SpMV and SpMM on CSR matrices ---------------------------- */

// A tridiagonal n x n CSR matrix on the device.
struct csr {
	int n, nnz;
	int *rows, *cols;
	float *vals;
};

static csr make_csr(int n)
{
	std::vector<int> rows(n + 1), cols;
	std::vector<float> vals;
	for (int i = 0; i < n; i++) {
		rows[i] = (int)cols.size();
		for (int j = i - 1; j <= i + 1; j++)
			if (j >= 0 && j < n) {
				cols.push_back(j);
				vals.push_back(j == i ? 4.f : -1.f);
			}
	}
	rows[n] = (int)cols.size();
	csr m{n, (int)cols.size(), nullptr, nullptr, nullptr};
	m.rows = (int *)dev_alloc(rows.size() * 4);
	m.cols = (int *)dev_alloc(cols.size() * 4);
	m.vals = (float *)dev_alloc(vals.size() * 4);
	cudaMemcpy(m.rows, rows.data(), rows.size() * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(m.cols, cols.data(), cols.size() * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(m.vals, vals.data(), vals.size() * 4, cudaMemcpyHostToDevice);
	return m;
}

static void sweep_cusparse()
{
	cusparseHandle_t h;
	if (!step(cusparseCreate(&h), "cusparse create"))
		return;
	const float one = 1, zero = 0;
	for (int n : {7, 257, 1024}) {
		csr m = make_csr(n);
		cusparseSpMatDescr_t A;
		step(cusparseCreateCsr(&A, n, n, m.nnz, m.rows, m.cols, m.vals, CUSPARSE_INDEX_32I,
				       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
		     "cusparse create_csr n=%d", n);
		float *x = (float *)dev_alloc((size_t)n * 4 * 8), *y = (float *)dev_alloc((size_t)n * 4 * 8);
		cusparseDnVecDescr_t vx, vy;
		cusparseCreateDnVec(&vx, n, x, CUDA_R_32F);
		cusparseCreateDnVec(&vy, n, y, CUDA_R_32F);
		const cusparseSpMVAlg_t mv[] = {CUSPARSE_SPMV_ALG_DEFAULT, CUSPARSE_SPMV_CSR_ALG1,
						CUSPARSE_SPMV_CSR_ALG2};
		for (cusparseSpMVAlg_t alg : mv) {
			size_t bytes = 0;
			if (!step(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx,
							  &zero, vy, CUDA_R_32F, alg, &bytes),
				  "cusparse spmv_buffer_size n=%d alg=%d", n, (int)alg))
				continue;
			void *buf = dev_alloc(bytes);
			step(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy,
					  CUDA_R_32F, alg, buf),
			     "cusparse spmv n=%d alg=%d", n, (int)alg);
			cudaFree(buf);
		}
		for (int cols : {1, 8}) {
			cusparseDnMatDescr_t B, C;
			cusparseCreateDnMat(&B, n, cols, n, x, CUDA_R_32F, CUSPARSE_ORDER_COL);
			cusparseCreateDnMat(&C, n, cols, n, y, CUDA_R_32F, CUSPARSE_ORDER_COL);
			const cusparseSpMMAlg_t mm[] = {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG1,
							CUSPARSE_SPMM_CSR_ALG2};
			for (cusparseSpMMAlg_t alg : mm) {
				size_t bytes = 0;
				if (!step(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
								  CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A,
								  B, &zero, C, CUDA_R_32F, alg, &bytes),
					  "cusparse spmm_buffer_size n=%d cols=%d alg=%d", n, cols, (int)alg))
					continue;
				void *buf = dev_alloc(bytes);
				step(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
						  CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, B, &zero, C,
						  CUDA_R_32F, alg, buf),
				     "cusparse spmm n=%d cols=%d alg=%d", n, cols, (int)alg);
				cudaFree(buf);
			}
			cusparseDestroyDnMat(B);
			cusparseDestroyDnMat(C);
		}
		cusparseDestroyDnVec(vx);
		cusparseDestroyDnVec(vy);
		step(cusparseDestroySpMat(A), "cusparse destroy_spmat n=%d", n);
		cudaFree(x);
		cudaFree(y);
		cudaFree(m.rows);
		cudaFree(m.cols);
		cudaFree(m.vals);
	}
	step((int)cudaDeviceSynchronize(), "cusparse synchronize");
	step(cusparseDestroy(h), "cusparse destroy");
}

/* ---- cuSOLVER: dense LU, Cholesky, SVD ---------------------------------- */

static void sweep_cusolver()
{
	cusolverDnHandle_t h;
	if (!step(cusolverDnCreate(&h), "cusolver create"))
		return;
	int *info = (int *)dev_alloc(4);
	for (int n : {1, 7, 32, 64, 257}) {
		// A diagonally dominant matrix (its factorisation is well defined).
		std::vector<float> host((size_t)n * n, 0.f);
		for (int i = 0; i < n; i++)
			host[(size_t)i * n + i] = (float)n + 1;
		float *a = (float *)dev_alloc(host.size() * 4);
		int *piv = (int *)dev_alloc((size_t)n * 4);
		int lwork = 0;
		cudaMemcpy(a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
		if (step(cusolverDnSgetrf_bufferSize(h, n, n, a, n, &lwork),
			 "cusolver getrf_buffer_size n=%d", n)) {
			float *work = (float *)dev_alloc((size_t)lwork * 4);
			step(cusolverDnSgetrf(h, n, n, a, n, work, piv, info), "cusolver getrf n=%d", n);
			step(cusolverDnSgetrs(h, CUBLAS_OP_N, n, 1, a, n, piv, work, n, info),
			     "cusolver getrs n=%d", n);
			cudaFree(work);
		}
		cudaMemcpy(a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
		if (step(cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, n, &lwork),
			 "cusolver potrf_buffer_size n=%d", n)) {
			float *work = (float *)dev_alloc((size_t)lwork * 4);
			step(cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, n, work, lwork, info),
			     "cusolver potrf n=%d", n);
			cudaFree(work);
		}
		if (n <= 64) {
			cudaMemcpy(a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
			float *s = (float *)dev_alloc((size_t)n * 4),
			      *u = (float *)dev_alloc(host.size() * 4),
			      *vt = (float *)dev_alloc(host.size() * 4);
			if (step(cusolverDnSgesvd_bufferSize(h, n, n, &lwork),
				 "cusolver gesvd_buffer_size n=%d", n)) {
				float *work = (float *)dev_alloc((size_t)lwork * 4);
				step(cusolverDnSgesvd(h, 'A', 'A', n, n, a, n, s, u, n, vt, n, work, lwork,
						      nullptr, info),
				     "cusolver gesvd n=%d", n);
				cudaFree(work);
			}
			cudaFree(s);
			cudaFree(u);
			cudaFree(vt);
		}
		cudaFree(a);
		cudaFree(piv);
	}
	step((int)cudaDeviceSynchronize(), "cusolver synchronize");
	cudaFree(info);
	step(cusolverDnDestroy(h), "cusolver destroy");
}

/* ---- cuRAND: every generator, a few sizes ------------------------------- */

static void sweep_curand()
{
	const struct {
		curandRngType_t type;
		const char *name;
	} gens[] = {{CURAND_RNG_PSEUDO_XORWOW, "xorwow"},
		    {CURAND_RNG_PSEUDO_PHILOX4_32_10, "philox"},
		    {CURAND_RNG_PSEUDO_MRG32K3A, "mrg32k3a"},
		    {CURAND_RNG_PSEUDO_MTGP32, "mtgp32"},
		    {CURAND_RNG_QUASI_SOBOL32, "sobol32"}};
	float *out = (float *)dev_alloc((1 << 20) * 4);
	for (auto &g : gens) {
		curandGenerator_t gen;
		if (!step(curandCreateGenerator(&gen, g.type), "curand create %s", g.name))
			continue;
		if (g.type != CURAND_RNG_QUASI_SOBOL32)
			step(curandSetPseudoRandomGeneratorSeed(gen, 1234), "curand seed %s", g.name);
		for (size_t n : {(size_t)256, (size_t)4096, (size_t)1 << 20}) {
			step(curandGenerateUniform(gen, out, n), "curand uniform %s n=%zu", g.name, n);
			step(curandGenerateNormal(gen, out, n, 0.f, 1.f), "curand normal %s n=%zu", g.name,
			     n);
		}
		step(curandDestroyGenerator(gen), "curand destroy %s", g.name);
	}
	step((int)cudaDeviceSynchronize(), "curand synchronize");
	cudaFree(out);
}

/* ---- cuFFT: 1D and 2D, C2C and R2C, several sizes ----------------------- */

static void sweep_cufft()
{
	const size_t maxbytes = 2 * 1024 * 1024 * sizeof(cufftComplex);
	cufftComplex *data = (cufftComplex *)dev_alloc(maxbytes), *out = (cufftComplex *)dev_alloc(maxbytes);
	// Powers of 2, of 3, 5 and 7 mixed, a prime (Bluestein), a large one.
	for (int n : {8, 64, 243, 1000, 1024, 1031, 4096, 65536}) {
		for (int batch : {1, 4}) {
			cufftHandle plan;
			if (step(cufftPlan1d(&plan, n, CUFFT_C2C, batch), "cufft plan1d c2c n=%d batch=%d", n,
				 batch)) {
				step(cufftExecC2C(plan, data, out, CUFFT_FORWARD),
				     "cufft c2c forward n=%d batch=%d", n, batch);
				step(cufftExecC2C(plan, out, out, CUFFT_INVERSE),
				     "cufft c2c inverse in place n=%d batch=%d", n, batch);
				step(cufftDestroy(plan), "cufft destroy c2c n=%d", n);
			}
			if (step(cufftPlan1d(&plan, n, CUFFT_R2C, batch), "cufft plan1d r2c n=%d batch=%d", n,
				 batch)) {
				step(cufftExecR2C(plan, (cufftReal *)data, out), "cufft r2c n=%d batch=%d", n,
				     batch);
				step(cufftDestroy(plan), "cufft destroy r2c n=%d", n);
			}
			if (step(cufftPlan1d(&plan, n, CUFFT_C2R, batch), "cufft plan1d c2r n=%d batch=%d", n,
				 batch)) {
				step(cufftExecC2R(plan, out, (cufftReal *)data), "cufft c2r n=%d batch=%d", n,
				     batch);
				step(cufftDestroy(plan), "cufft destroy c2r n=%d", n);
			}
		}
	}
	const int shapes2d[][2] = {{16, 16}, {64, 128}, {100, 100}, {7, 243}, {512, 512}};
	for (auto &s : shapes2d) {
		cufftHandle plan;
		if (step(cufftPlan2d(&plan, s[0], s[1], CUFFT_C2C), "cufft plan2d c2c %dx%d", s[0], s[1])) {
			step(cufftExecC2C(plan, data, out, CUFFT_FORWARD), "cufft c2c 2d %dx%d", s[0], s[1]);
			step(cufftDestroy(plan), "cufft destroy 2d c2c %dx%d", s[0], s[1]);
		}
		if (step(cufftPlan2d(&plan, s[0], s[1], CUFFT_R2C), "cufft plan2d r2c %dx%d", s[0], s[1])) {
			step(cufftExecR2C(plan, (cufftReal *)data, out), "cufft r2c 2d %dx%d", s[0], s[1]);
			step(cufftDestroy(plan), "cufft destroy 2d r2c %dx%d", s[0], s[1]);
		}
	}
	step((int)cudaDeviceSynchronize(), "cufft synchronize");
	cudaFree(data);
	cudaFree(out);
}

/* ---- cuDNN: convolutions with every algorithm offered, softmax ---------- */

static void sweep_cudnn()
{
	cudnnHandle_t h;
	if (!step(cudnnCreate(&h), "cudnn create"))
		return;
	printf("libs_sweep: cudnn version %zu (cudart %zu)\n", cudnnGetVersion(), cudnnGetCudartVersion());
	// N C H W, K R S, pad, stride
	const int convs[][9] = {{1, 3, 32, 32, 8, 3, 3, 1, 1},
				{2, 16, 17, 17, 32, 1, 1, 0, 1},
				{4, 8, 28, 28, 16, 5, 5, 2, 2},
				{1, 64, 14, 14, 64, 3, 3, 1, 1}};
	const size_t big = 64 << 20;
	void *x = dev_alloc(big), *w = dev_alloc(big), *y = dev_alloc(big), *ws = dev_alloc(big);
	for (auto &cv : convs) {
		int N = cv[0], C = cv[1], H = cv[2], W = cv[3], K = cv[4], R = cv[5], S = cv[6], pad = cv[7],
		    stride = cv[8];
		char shape[96];
		snprintf(shape, sizeof shape, "%dx%dx%dx%d k=%d %dx%d pad=%d stride=%d", N, C, H, W, K, R, S,
			 pad, stride);
		cudnnTensorDescriptor_t xd, yd;
		cudnnFilterDescriptor_t wd;
		cudnnConvolutionDescriptor_t cd;
		cudnnCreateTensorDescriptor(&xd);
		cudnnCreateTensorDescriptor(&yd);
		cudnnCreateFilterDescriptor(&wd);
		cudnnCreateConvolutionDescriptor(&cd);
		step(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W),
		     "cudnn x descriptor %s", shape);
		step(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S),
		     "cudnn w descriptor %s", shape);
		step(cudnnSetConvolution2dDescriptor(cd, pad, pad, stride, stride, 1, 1,
						     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
		     "cudnn conv descriptor %s", shape);
		int on, oc, oh, ow;
		step(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow),
		     "cudnn output dim %s", shape);
		cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow);
		const float one = 1, zero = 0;

		cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
		int nfwd = 0;
		if (step(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd,
								CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nfwd, fwd),
			 "cudnn forward algorithms %s", shape))
			for (int i = 0; i < nfwd; i++) {
				if (fwd[i].status != CUDNN_STATUS_SUCCESS || fwd[i].memory > big)
					continue;
				step(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, fwd[i].algo, ws, big,
							     &zero, yd, y),
				     "cudnn conv forward %s algo %d", shape, (int)fwd[i].algo);
			}
		cudnnConvolutionBwdDataAlgoPerf_t bwd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
		int nbwd = 0;
		if (step(cudnnGetConvolutionBackwardDataAlgorithm_v7(
			     h, wd, yd, cd, xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &nbwd, bwd),
			 "cudnn backward data algorithms %s", shape))
			for (int i = 0; i < nbwd; i++) {
				if (bwd[i].status != CUDNN_STATUS_SUCCESS || bwd[i].memory > big)
					continue;
				step(cudnnConvolutionBackwardData(h, &one, wd, w, yd, y, cd, bwd[i].algo, ws,
								  big, &zero, xd, x),
				     "cudnn conv backward data %s algo %d", shape, (int)bwd[i].algo);
			}
		cudnnConvolutionBwdFilterAlgoPerf_t bwf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
		int nbwf = 0;
		if (step(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
			     h, xd, yd, cd, wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &nbwf, bwf),
			 "cudnn backward filter algorithms %s", shape))
			for (int i = 0; i < nbwf; i++) {
				if (bwf[i].status != CUDNN_STATUS_SUCCESS || bwf[i].memory > big)
					continue;
				step(cudnnConvolutionBackwardFilter(h, &one, xd, x, yd, y, cd, bwf[i].algo,
								    ws, big, &zero, wd, w),
				     "cudnn conv backward filter %s algo %d", shape, (int)bwf[i].algo);
			}
		// Softmax and its gradient over the output, both algorithms and modes.
		for (cudnnSoftmaxAlgorithm_t alg : {CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG})
			for (cudnnSoftmaxMode_t mode :
			     {CUDNN_SOFTMAX_MODE_INSTANCE, CUDNN_SOFTMAX_MODE_CHANNEL}) {
				step(cudnnSoftmaxForward(h, alg, mode, &one, yd, y, &zero, yd, ws),
				     "cudnn softmax forward %s alg=%d mode=%d", shape, (int)alg, (int)mode);
				step(cudnnSoftmaxBackward(h, alg, mode, &one, yd, ws, yd, y, &zero, yd, x),
				     "cudnn softmax backward %s alg=%d mode=%d", shape, (int)alg, (int)mode);
			}
		cudnnDestroyTensorDescriptor(xd);
		cudnnDestroyTensorDescriptor(yd);
		cudnnDestroyFilterDescriptor(wd);
		cudnnDestroyConvolutionDescriptor(cd);
	}
	step((int)cudaDeviceSynchronize(), "cudnn synchronize");
	cudaFree(x);
	cudaFree(w);
	cudaFree(y);
	cudaFree(ws);
	step(cudnnDestroy(h), "cudnn destroy");
}

/* ---- cuDNN's backend (graph) API, as PyTorch uses it ------------------ */

// A finalized backend descriptor, or nullptr (the failing call is a step).
static cudnnBackendDescriptor_t backend_make(cudnnBackendDescriptorType_t type, const char *what)
{
	cudnnBackendDescriptor_t d = nullptr;
	if (!step(cudnnBackendCreateDescriptor(type, &d), "cudnn backend create %s", what))
		return nullptr;
	return d;
}

#define BSET(d, attr, type, count, ptr) cudnnBackendSetAttribute(d, attr, type, count, ptr)

static cudnnBackendDescriptor_t backend_tensor(int64_t uid, const int64_t dims[4], bool virt)
{
	cudnnBackendDescriptor_t t = backend_make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
	if (!t)
		return nullptr;
	const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
	cudnnDataType_t type = CUDNN_DATA_FLOAT;
	int64_t align = 16;
	int st = BSET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
	st = st ? st : BSET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
	st = st ? st : BSET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
	st = st ? st : BSET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
	st = st ? st : BSET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
	bool is_virtual = virt;
	st = st ? st : BSET(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
	if (!step(st ? st : cudnnBackendFinalize(t), "cudnn backend tensor %lld", (long long)uid)) {
		cudnnBackendDestroyDescriptor(t);
		return nullptr;
	}
	return t;
}

// One convolution forward as an operation graph: every engine configuration
// the heuristics offer becomes an execution plan, executed once.
static void backend_conv(cudnnHandle_t h, const int cv[9], void *x, void *w, void *y, void *ws,
			 size_t wsbytes)
{
	int64_t N = cv[0], C = cv[1], H = cv[2], W = cv[3], K = cv[4], R = cv[5], S = cv[6], pad = cv[7],
		stride = cv[8];
	int64_t OH = (H + 2 * pad - R) / stride + 1, OW = (W + 2 * pad - S) / stride + 1;
	char shape[96];
	snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld k=%lld %lldx%lld", (long long)N, (long long)C,
		 (long long)H, (long long)W, (long long)K, (long long)R, (long long)S);
	const int64_t xd[4] = {N, C, H, W}, wd[4] = {K, C, R, S}, yd[4] = {N, K, OH, OW};
	cudnnBackendDescriptor_t tx = backend_tensor('x', xd, false), tw = backend_tensor('w', wd, false),
				 ty = backend_tensor('y', yd, false);
	cudnnBackendDescriptor_t conv = backend_make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution");
	cudnnBackendDescriptor_t op = nullptr, graph = nullptr, heur = nullptr;
	if (!tx || !tw || !ty || !conv)
		goto out;
	{
		int64_t dims = 2, pads[2] = {pad, pad}, strides[2] = {stride, stride}, dil[2] = {1, 1};
		cudnnDataType_t comp = CUDNN_DATA_FLOAT;
		cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
		int st = BSET(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
		st = st ? st
			: BSET(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
		st = st ? st : BSET(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
		st = st ? st : BSET(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
		st = st ? st : BSET(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
		st = st ? st : BSET(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
		st =
		    st ? st : BSET(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
		if (!step(st ? st : cudnnBackendFinalize(conv), "cudnn backend convolution %s", shape))
			goto out;
	}
	if (!(op = backend_make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "conv forward")))
		goto out;
	{
		float alpha = 1, beta = 0;
		int st = BSET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR,
			      1, &tx);
		st = st ? st
			: BSET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR,
			       1, &tw);
		st = st ? st
			: BSET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR,
			       1, &ty);
		st = st ? st
			: BSET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
			       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
		st = st ? st
			: BSET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
			       &alpha);
		st = st ? st
			: BSET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
		if (!step(st ? st : cudnnBackendFinalize(op), "cudnn backend conv forward operation %s",
			  shape))
			goto out;
	}
	if (!(graph = backend_make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph")))
		goto out;
	{
		int st = BSET(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
		st = st ? st : BSET(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
		if (!step(st ? st : cudnnBackendFinalize(graph), "cudnn backend operation graph %s", shape))
			goto out;
	}
	for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
		if (!(heur = backend_make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics")))
			goto out;
		int st = BSET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
			      &graph);
		st = st ? st : BSET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
		if (!step(st ? st : cudnnBackendFinalize(heur), "cudnn backend heuristics %s mode %d", shape,
			  (int)mode))
			goto out;
		int64_t count = 0;
		if (!step(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
						   CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
			  "cudnn backend heuristic results %s mode %d", shape, (int)mode))
			goto out;
		std::vector<cudnnBackendDescriptor_t> cfgs((size_t)count);
		for (auto &c : cfgs)
			cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c);
		int64_t got = 0;
		step(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
					      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs.data()),
		     "cudnn backend engine configs %s mode %d: %lld", shape, (int)mode, (long long)count);
		for (int64_t i = 0; i < got; i++) {
			cudnnBackendDescriptor_t plan = nullptr;
			cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
			int pst = BSET(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
			pst = pst ? pst
				  : BSET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
					 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[(size_t)i]);
			pst = pst ? pst : cudnnBackendFinalize(plan);
			// An engine cuDNN itself declines for this graph (NOT_SUPPORTED at
			// finalize, as on a GPU) is not a step; anything else is.
			if (pst == CUDNN_STATUS_NOT_SUPPORTED ||
			    pst == CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH ||
			    pst == CUDNN_STATUS_NOT_SUPPORTED_SHAPE) {
				printf("libs_sweep: cudnn backend plan %s mode %d config %lld declined by "
				       "cuDNN (%d)\n",
				       shape, (int)mode, (long long)i, pst);
			} else if (step(pst, "cudnn backend plan %s mode %d config %lld", shape, (int)mode,
					(long long)i)) {
				int64_t wsneed = 0, n = 0;
				cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
							 CUDNN_TYPE_INT64, 1, &n, &wsneed);
				if ((size_t)wsneed <= wsbytes) {
					cudnnBackendDescriptor_t pack = nullptr;
					cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
								     &pack);
					int64_t uids[3] = {'x', 'w', 'y'};
					void *ptrs[3] = {x, w, y};
					int vst = BSET(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
						       CUDNN_TYPE_INT64, 3, uids);
					vst = vst ? vst
						  : BSET(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
							 CUDNN_TYPE_VOID_PTR, 3, ptrs);
					vst = vst ? vst
						  : BSET(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
							 CUDNN_TYPE_VOID_PTR, 1, &ws);
					vst = vst ? vst : cudnnBackendFinalize(pack);
					step(vst ? vst : cudnnBackendExecute(h, plan, pack),
					     "cudnn backend execute %s mode %d config %lld (workspace %lld)",
					     shape, (int)mode, (long long)i, (long long)wsneed);
					cudnnBackendDestroyDescriptor(pack);
				}
			}
			cudnnBackendDestroyDescriptor(plan);
		}
		for (auto &c : cfgs)
			cudnnBackendDestroyDescriptor(c);
		cudnnBackendDestroyDescriptor(heur);
		heur = nullptr;
	}
out:
	for (cudnnBackendDescriptor_t d : {heur, graph, op, conv, tx, tw, ty})
		if (d)
			cudnnBackendDestroyDescriptor(d);
}

static void sweep_cudnn_backend()
{
	// cuDNN's runtime-compiled engines dlopen NVRTC and dlclose it again;
	// what NVRTC allocated is then reachable only from a library no longer
	// mapped, which LeakSanitizer reports as leaked by "<unknown module>".
	// Kept loaded, nothing is reported (and xgpu's own frees still are).
	dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_NODELETE);
	cudnnHandle_t h;
	if (!step(cudnnCreate(&h), "cudnn backend handle"))
		return;
	const int convs[][9] = {{1, 3, 32, 32, 8, 3, 3, 1, 1}, {1, 64, 14, 14, 64, 3, 3, 1, 1}};
	const size_t big = 64 << 20;
	void *x = dev_alloc(big), *w = dev_alloc(big), *y = dev_alloc(big), *ws = dev_alloc(big);
	for (auto &cv : convs)
		backend_conv(h, cv, x, w, y, ws, big);
	step((int)cudaDeviceSynchronize(), "cudnn backend synchronize");
	cudaFree(x);
	cudaFree(w);
	cudaFree(y);
	cudaFree(ws);
	step(cudnnDestroy(h), "cudnn backend destroy");
}

int main(int argc, char **argv)
{
	const struct {
		const char *name;
		void (*run)();
	} sections[] = {{"cublas", sweep_cublas},     {"cublaslt", sweep_cublaslt},
			{"cusparse", sweep_cusparse}, {"cusolver", sweep_cusolver},
			{"curand", sweep_curand},     {"cufft", sweep_cufft},
			{"cudnn", sweep_cudnn},       {"cudnn_backend", sweep_cudnn_backend}};
	for (auto &s : sections) {
		bool wanted = argc < 2;
		for (int i = 1; i < argc; i++)
			wanted |= !strcmp(argv[i], s.name);
		if (wanted)
			s.run();
	}
	for (int i = 1; i < argc; i++) {
		bool known = false;
		for (auto &s : sections)
			known |= !strcmp(argv[i], s.name);
		if (!known) {
			fprintf(stderr, "libs_sweep: no section %s\n", argv[i]);
			return 2;
		}
	}
	printf("libs_sweep: %u steps, %u passed, %u failed\n", steps, passed, steps - passed);
	return steps == passed ? 0 : 1;
}
