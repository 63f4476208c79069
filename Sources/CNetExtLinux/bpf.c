#include "CNetExtLinux.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long netext_bpf(int command, union bpf_attr *attr) {
    return syscall(__NR_bpf, command, attr, sizeof(*attr));
}

// The program, hand-assembled (instruction encoding: linux/bpf.h, "struct bpf_insn"; the
// context: "struct bpf_sock", whose `mark` a BPF_CGROUP_INET_SOCK_CREATE program may write):
//   r2 = MARK
//   *(u32 *)(r1 + offsetof(struct bpf_sock, mark)) = r2
//   r0 = 1                     (let the socket be created)
//   exit
int netext_bpf_socket_mark_program(unsigned int mark, char *log, unsigned int log_size) {
    struct bpf_insn program[4];
    memset(program, 0, sizeof(program));
    program[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
    program[0].dst_reg = BPF_REG_2;
    program[0].imm = (int)mark;
    program[1].code = BPF_STX | BPF_MEM | BPF_W;
    program[1].dst_reg = BPF_REG_1;
    program[1].src_reg = BPF_REG_2;
    program[1].off = offsetof(struct bpf_sock, mark);
    program[2].code = BPF_ALU64 | BPF_MOV | BPF_K;
    program[2].dst_reg = BPF_REG_0;
    program[2].imm = 1;
    program[3].code = BPF_JMP | BPF_EXIT;

    static const char license[] = "Apache-2.0";
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_CGROUP_SOCK;
    attr.expected_attach_type = BPF_CGROUP_INET_SOCK_CREATE;
    attr.insn_cnt = 4;
    attr.insns = (unsigned long)program;
    attr.license = (unsigned long)license;
    if (log != NULL && log_size > 0) {
        log[0] = 0;
        attr.log_level = 1;
        attr.log_buf = (unsigned long)log;
        attr.log_size = log_size;
    }
    memcpy(attr.prog_name, "netext_appmark", sizeof("netext_appmark"));
    long fd = netext_bpf(BPF_PROG_LOAD, &attr);
    if (fd < 0) return -errno;
    fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    return (int)fd;
}

int netext_bpf_cgroup_attach(int cgroup_fd, int program_fd) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (unsigned int)cgroup_fd;
    attr.attach_bpf_fd = (unsigned int)program_fd;
    attr.attach_type = BPF_CGROUP_INET_SOCK_CREATE;
    /* One program per cgroup, replacing the one there: a netextd that crashed left its
       program attached, and the next one's takes its place instead of running beside it. */
    attr.attach_flags = BPF_F_ALLOW_OVERRIDE;
    return netext_bpf(BPF_PROG_ATTACH, &attr) == 0 ? 0 : -errno;
}

int netext_bpf_cgroup_detach(int cgroup_fd, int program_fd) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (unsigned int)cgroup_fd;
    attr.attach_bpf_fd = (unsigned int)program_fd;
    attr.attach_type = BPF_CGROUP_INET_SOCK_CREATE;
    return netext_bpf(BPF_PROG_DETACH, &attr) == 0 ? 0 : -errno;
}
