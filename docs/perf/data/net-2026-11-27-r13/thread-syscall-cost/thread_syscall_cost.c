#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int unsh; static void *idle(void *a){(void)a;if(unsh)unshare(CLONE_FILES);for(;;)sleep(100);return 0;}
static double run(int *sv){char b[64]={0};double t=now();for(int i=0;i<1000000;i++){if(send(sv[0],b,64,0)!=64)abort();if(recv(sv[1],b,64,0)!=64)abort();}return (now()-t)*1e3;}
int main(int c,char**v){unsh=c>1;(void)v;int sv[2];socketpair(AF_UNIX,SOCK_STREAM,0,sv);
 for(int r=0;r<3;r++)printf("single: %.0f ns per send+recv\n",run(sv));
 pthread_t th;pthread_create(&th,0,idle,0);usleep(1000);
 for(int r=0;r<3;r++)printf("with a sleeping thread: %.0f ns per send+recv\n",run(sv));
 return 0;}
