#include "common/privilege.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/capability.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"

static const cap_value_t stage_init[] = {CAP_KILL, CAP_SETUID, CAP_SETGID, CAP_SYS_CHROOT};
static const cap_value_t stage_kmods[] = {CAP_KILL, CAP_MKNOD, CAP_SYS_MODULE, CAP_CHOWN, CAP_FOWNER,
                                          CAP_DAC_OVERRIDE, CAP_SETPCAP};
static const cap_value_t stage_container[] = {CAP_KILL, CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE};
static const cap_value_t stage_mount[] = {CAP_KILL,       CAP_SETUID,          CAP_SETGID,    CAP_SYS_CHROOT,
                                          CAP_SYS_ADMIN,  CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_DAC_OVERRIDE,
                                          CAP_FOWNER,     CAP_CHOWN};
static const cap_value_t stage_cgroup[] = {CAP_KILL, CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, CAP_SYS_RESOURCE};
static const cap_value_t stage_ldcache[] = {CAP_KILL,       CAP_SETUID,          CAP_SETGID,     CAP_SYS_CHROOT,
                                            CAP_SYS_ADMIN,  CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_SETPCAP,
                                            CAP_DAC_OVERRIDE};
static const cap_value_t stage_slice[] = {CAP_KILL, CAP_CHOWN};
static const cap_value_t stage_shutdown[] = {CAP_KILL};

static const struct {
        const cap_value_t *v;
        int n;
} stages[] = {
        [GS_STAGE_INIT] = {stage_init, GS_ARRAY_SIZE(stage_init)},
        [GS_STAGE_KMODS] = {stage_kmods, GS_ARRAY_SIZE(stage_kmods)},
        [GS_STAGE_CONTAINER] = {stage_container, GS_ARRAY_SIZE(stage_container)},
        [GS_STAGE_MOUNT] = {stage_mount, GS_ARRAY_SIZE(stage_mount)},
        [GS_STAGE_CGROUP] = {stage_cgroup, GS_ARRAY_SIZE(stage_cgroup)},
        [GS_STAGE_LDCACHE] = {stage_ldcache, GS_ARRAY_SIZE(stage_ldcache)},
        [GS_STAGE_SLICE] = {stage_slice, GS_ARRAY_SIZE(stage_slice)},
        [GS_STAGE_SHUTDOWN] = {stage_shutdown, GS_ARRAY_SIZE(stage_shutdown)},
};

static bool active(void) { return geteuid() == 0; }

/* Set `flag` in `to` for each capability of `stage` that `from` has permitted. */
static void set_if_permitted(cap_t from, cap_t to, cap_flag_t flag, enum gs_stage stage)
{
        for (int i = 0; i < stages[stage].n; i++) {
                cap_flag_value_t have = CAP_CLEAR;
                cap_get_flag(from, stages[stage].v[i], CAP_PERMITTED, &have);
                if (have == CAP_SET)
                        cap_set_flag(to, flag, 1, &stages[stage].v[i], CAP_SET);
        }
}

int gs_caps_init(struct gs_error *err)
{
        if (!active())
                return 0;
        cap_t cur = cap_get_proc();
        cap_t c = cap_init();
        if (cur == NULL || c == NULL) {
                cap_free(cur);
                cap_free(c);
                return gs_error_sys(err, "capabilities");
        }
        for (size_t s = 0; s < GS_ARRAY_SIZE(stages); s++)
                set_if_permitted(cur, c, CAP_PERMITTED, (enum gs_stage)s);
        int rc = cap_set_proc(c);
        cap_free(cur);
        cap_free(c);
        if (rc < 0)
                return gs_error_sys(err, "cannot set the permitted capabilities");
        return 0;
}

int gs_caps_enter(enum gs_stage stage, struct gs_error *err)
{
        if (!active())
                return 0;
        cap_t c = cap_get_proc();
        if (c == NULL)
                return gs_error_sys(err, "capabilities");
        cap_clear_flag(c, CAP_EFFECTIVE);
        set_if_permitted(c, c, CAP_EFFECTIVE, stage);
        int rc = cap_set_proc(c);
        cap_free(c);
        if (rc < 0)
                return gs_error_sys(err, "cannot raise the capabilities of stage %d", (int)stage);
        return 0;
}
