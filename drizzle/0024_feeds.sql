CREATE TABLE "feed_offers" (
	"feed_id" integer NOT NULL,
	"internal_id" text NOT NULL,
	"property_id" integer NOT NULL,
	"content_digest" text NOT NULL,
	"last_run_id" integer NOT NULL,
	"withdrawn_by_feed" boolean DEFAULT false NOT NULL,
	CONSTRAINT "feed_offers_feed_id_internal_id_pk" PRIMARY KEY("feed_id","internal_id")
);
--> statement-breakpoint
CREATE TABLE "feed_run_problems" (
	"run_id" integer NOT NULL,
	"seq" integer NOT NULL,
	"internal_id" text NOT NULL,
	"code" text NOT NULL,
	"field" text,
	"message" text NOT NULL,
	CONSTRAINT "feed_run_problems_run_id_seq_pk" PRIMARY KEY("run_id","seq")
);
--> statement-breakpoint
CREATE TABLE "feed_runs" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "feed_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"feed_id" integer NOT NULL,
	"tenant_id" integer NOT NULL,
	"status" text DEFAULT 'running' NOT NULL,
	"trigger" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"detail" text,
	"failure_code" text,
	"offers" integer DEFAULT 0 NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"updated" integer DEFAULT 0 NOT NULL,
	"unchanged" integer DEFAULT 0 NOT NULL,
	"withdrawn" integer DEFAULT 0 NOT NULL,
	"rejected" integer DEFAULT 0 NOT NULL,
	"errors" integer DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	CONSTRAINT "feed_runs_status_check" CHECK ("feed_runs"."status" in ('running', 'succeeded', 'partially_succeeded', 'failed', 'unchanged')),
	CONSTRAINT "feed_runs_trigger_check" CHECK ("feed_runs"."trigger" in ('manual', 'schedule'))
);
--> statement-breakpoint
CREATE TABLE "feeds" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "feeds_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"tenant_id" integer NOT NULL,
	"url" text NOT NULL,
	"format" text NOT NULL,
	"schedule_minutes" integer DEFAULT 60 NOT NULL,
	"allow_mass_withdrawal" boolean DEFAULT false NOT NULL,
	"etag" text,
	"last_modified" text,
	"content_digest" text,
	"next_run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "feeds_format_check" CHECK ("feeds"."format" in ('yandex_realty')),
	CONSTRAINT "feeds_schedule_check" CHECK ("feeds"."schedule_minutes" between 15 and 10080)
);
--> statement-breakpoint
ALTER TABLE "feed_offers" ADD CONSTRAINT "feed_offers_feed_id_feeds_id_fk" FOREIGN KEY ("feed_id") REFERENCES "public"."feeds"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feed_offers" ADD CONSTRAINT "feed_offers_property_id_properties_id_fk" FOREIGN KEY ("property_id") REFERENCES "public"."properties"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feed_run_problems" ADD CONSTRAINT "feed_run_problems_run_id_feed_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."feed_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feed_runs" ADD CONSTRAINT "feed_runs_feed_id_feeds_id_fk" FOREIGN KEY ("feed_id") REFERENCES "public"."feeds"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feed_runs" ADD CONSTRAINT "feed_runs_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feeds" ADD CONSTRAINT "feeds_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "feed_offers_property_idx" ON "feed_offers" USING btree ("property_id");--> statement-breakpoint
CREATE INDEX "feed_runs_feed_idx" ON "feed_runs" USING btree ("feed_id","id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "feed_runs_one_running_key" ON "feed_runs" USING btree ("feed_id") WHERE "feed_runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "feed_runs_running_idx" ON "feed_runs" USING btree ("lease_expires_at") WHERE "feed_runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "feeds_tenant_idx" ON "feeds" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE INDEX "feeds_next_run_idx" ON "feeds" USING btree ("next_run_at");