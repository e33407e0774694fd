/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A QEMU TCG plugin for scripts/profile: counts the executions of every translation block of
 * the guest kernel (addresses in the upper half), and writes the counts on request: when a file
 * DIR/ctl/NAME appears, it writes DIR/NAME.tsv ("address instructions executions" per block with
 * executions) and removes the request. Under `-icount shift=0` the guest's clock advances one ns
 * per instruction executed, so a block's instructions times its executions is the guest time it
 * took. Argument: dir=DIR.
 *
 * Only the few calls of QEMU's plugin API this needs are declared here (they are stable since
 * its first version); the plugin claims API version 2.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
enum { CB_NO_REGS };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb_t cb,
					  int flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

EXPORT int qemu_plugin_version = 2;

struct block {
	uint64_t vaddr;
	uint64_t execs;
	uint32_t insns;
	struct block *next;
};

static struct block *_Atomic blocks;
static char dir[4096];

static void block_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	/* icount runs every vCPU in one thread: no other writer. */
	((struct block *)udata)->execs++;
}

static void block_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	(void)id;
	if (vaddr < 0xffff800000000000ULL)
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->vaddr = vaddr;
	b->insns = (uint32_t)qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;	/* published after it is filled in */
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, CB_NO_REGS, b);
}

/* Write DIR/NAME.tsv from the counts as they are now. */
static void dump(const char *name)
{
	char path[8192], tmp[8300];
	struct block *b;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.tsv", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.part", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	for (b = blocks; b; b = b->next)
		if (b->execs)
			fprintf(f, "%016llx\t%u\t%llu\n", (unsigned long long)b->vaddr, b->insns,
				(unsigned long long)b->execs);
	fclose(f);
	rename(tmp, path);
}

/* Answer the requests in DIR/ctl every 20 ms. */
static void *watch(void *arg)
{
	char ctl[8192], req[8500];

	(void)arg;
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	for (;;) {
		DIR *d = opendir(ctl);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			dump(e->d_name);
			snprintf(req, sizeof(req), "%s/%s", ctl, e->d_name);
			unlink(req);
		}
		if (d)
			closedir(d);
		usleep(20000);
	}
	return NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info, int argc,
			       char **argv)
{
	pthread_t t;
	int i;

	(void)info;
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "dir=", 4))
			snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
	if (!dir[0]) {
		fprintf(stderr, "blocks plugin: dir=DIR is required\n");
		return 1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, block_trans);
	if (pthread_create(&t, NULL, watch, NULL))
		return 1;
	pthread_detach(t);
	return 0;
}
