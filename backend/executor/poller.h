/* SPDX-License-Identifier: Apache-2.0 */
/* poller.h - a domain's aVCPU poller thread. */
#ifndef XGPU_POLLER_H
#define XGPU_POLLER_H

void *xgpu_poller_main(void *arg);

#endif
