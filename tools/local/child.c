/*
 * child.c — one child process (see child.h).
 */
#define _GNU_SOURCE
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_from(int first)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
        return;
#endif
    for (int fd = first; fd < 4096; fd++)
        close(fd);
}

pid_t gf_child_start(char *const argv[], char *const envp[], const char *log_path, int out_fd)
{
    int log =
        open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log < 0)
        return -1;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) {
        close(log);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* The child: async-signal-safe calls only. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127); /* the supervisor died before the line above */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(null, 0) < 0 || dup2(out_fd >= 0 ? out_fd : log, 1) < 0 || dup2(log, 2) < 0)
            _exit(127);
        close_from(3);
        execve(argv[0], argv, envp);
        static const char msg[] = "gamefn-local: cannot execute the program\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(127);
    }
    int saved = errno;
    close(log);
    close(null);
    if (pid > 0)
        setpgid(pid, pid); /* also from here: whichever runs first, the group exists */
    errno = saved;
    return pid;
}

bool gf_child_kill(pid_t pid, int sig)
{
    if (pid <= 0)
        return false;
    if (kill(-pid, sig) == 0)
        return true;
    return kill(pid, sig) == 0;
}

void gf_child_describe(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "stopped (status 0x%x)", (unsigned)status);
}
