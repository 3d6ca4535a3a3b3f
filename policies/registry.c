/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c - the table of scheduling policies, selected by name. */
#include "policy.h"

#include <stddef.h>
#include <string.h>

static const struct xgpu_policy_ops *const policies[] = {
    &xgpu_policy_none, &xgpu_policy_rr,   &xgpu_policy_accc,    &xgpu_policy_xc,
    &xgpu_policy_slaf, &xgpu_policy_augc, &xgpu_policy_cosched, &xgpu_policy_wfq,
};

const struct xgpu_policy_ops *xgpu_policy_at(unsigned i)
{
	return i < sizeof policies / sizeof policies[0] ? policies[i] : NULL;
}

const struct xgpu_policy_ops *xgpu_policy_find(const char *name)
{
	for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
		if (!strcmp(policies[i]->name, name))
			return policies[i];
	return NULL;
}

const char *xgpu_policy_names(void)
{
	static char names[256];
	if (!names[0]) {
		for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
			if (i)
				strcat(names, ", ");
			strcat(names, policies[i]->name);
		}
	}
	return names;
}
